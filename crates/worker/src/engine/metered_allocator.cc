// The worker's ArrayBuffer allocator under V8's heap sandbox: V8's own default allocator, which
// places every backing store inside the sandbox, with each allocation charged to the run's
// memory meter first (engine/memory.rs). Rust cannot implement the allocator itself in this
// flavour (the v8 crate has no Rust allocator when the sandbox is on), so this one class is C++.
//
// V8 15.2's headers build only with a recent clang and V8's own libc++; this file declares the
// allocator's virtual interface itself instead, member for member in the order of
// v8/include/v8-array-buffer.h (v8 crate 152.2.0), so the vtable is the one V8 calls:
// ~Allocator (two entries), Allocate, AllocateUninitialized, Free, MaxAllocationSize,
// GetPageAllocator. Built with -fno-rtti, as V8 is. A new V8 version must be checked against
// that header before this file is trusted again (the pin in Cargo.toml is exact for this reason).

#include <cstddef>

namespace v8 {
class PageAllocator;
class ArrayBuffer {
 public:
  class Allocator {
   public:
    virtual ~Allocator() = default;
    virtual void* Allocate(size_t length) = 0;
    virtual void* AllocateUninitialized(size_t length) = 0;
    virtual void Free(void* data, size_t length) = 0;
    virtual size_t MaxAllocationSize() const = 0;
    virtual PageAllocator* GetPageAllocator() { return nullptr; }
    static Allocator* NewDefaultAllocator();
  };
};
}  // namespace v8

// The meter, in Rust (engine/memory.rs). Charge returns false when the allocation would pass
// the run's budget; release returns bytes freed or never handed out.
extern "C" bool codemode_meter_charge(size_t length);
extern "C" void codemode_meter_release(size_t length);

namespace {

class MeteredAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit MeteredAllocator(v8::ArrayBuffer::Allocator* inner) : inner_(inner) {}
  ~MeteredAllocator() override { delete inner_; }

  void* Allocate(size_t length) override {
    if (!codemode_meter_charge(length)) return nullptr;
    void* data = inner_->Allocate(length);
    if (data == nullptr) codemode_meter_release(length);
    return data;
  }

  void* AllocateUninitialized(size_t length) override {
    if (!codemode_meter_charge(length)) return nullptr;
    void* data = inner_->AllocateUninitialized(length);
    if (data == nullptr) codemode_meter_release(length);
    return data;
  }

  void Free(void* data, size_t length) override {
    inner_->Free(data, length);
    codemode_meter_release(length);
  }

  size_t MaxAllocationSize() const override { return inner_->MaxAllocationSize(); }

  v8::PageAllocator* GetPageAllocator() override { return inner_->GetPageAllocator(); }

 private:
  v8::ArrayBuffer::Allocator* inner_;
};

}  // namespace

// A new metered allocator owning V8's default one; the caller (V8, through the shared_ptr the
// isolate's CreateParams hold) deletes it through the virtual destructor. Null if V8 gave none.
extern "C" v8::ArrayBuffer::Allocator* codemode_metered_allocator_new() {
  v8::ArrayBuffer::Allocator* inner = v8::ArrayBuffer::Allocator::NewDefaultAllocator();
  if (inner == nullptr) return nullptr;
  return new MeteredAllocator(inner);
}
