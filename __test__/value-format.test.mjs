// Values cross to the worker in this Node's V8 serializer format. A Node whose V8 writes a newer
// format than the worker's V8 reads must be refused with a typed error before any value crosses,
// and a value in a newer format that reaches the worker anyway must be refused, never misread.
// A newer Node is simulated by a Serializer whose header claims the next format.
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { executor, ExecutorError, IsolateExecutor, rejection } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { Serializer } = require('node:v8');
const { connect } = require('../index.js');
const { nodeValueFormat } = require('../lib/clone.js');
const { loadNative } = require('../lib/native.js');

const supported = loadNative().binding.valueFormatVersion();
const realWriteHeader = Serializer.prototype.writeHeader;

/** Makes this Node write headers claiming format `version` (as a newer Node's V8 would). */
function pretendFormat(version) {
  Serializer.prototype.writeHeader = function writeHeader() {
    this.writeRawBytes(Buffer.from([0xff, version]));
  };
}

afterEach(() => {
  Serializer.prototype.writeHeader = realWriteHeader;
});

describe('the value-serializer format', () => {
  it('this Node writes the format the worker speaks', () => {
    expect(supported).toBe(15);
    expect(nodeValueFormat()).toBe(supported);
  });

  it('a newer format refuses the executor with VALUE_FORMAT_UNSUPPORTED, before a worker starts', async () => {
    pretendFormat(supported + 1);
    let err;
    try {
      new IsolateExecutor({ workers: 1 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExecutorError);
    expect(err.code).toBe('VALUE_FORMAT_UNSUPPORTED');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`format ${supported + 1}`);
    expect(err.message).toContain(`speaks format ${supported}`);
    expect(err.message).toContain(process.version);
    const refused = rejection(connect('ws://127.0.0.1:9', { websocket: require('ws') }));
    // Restored before anything awaits: vitest's own messages to its parent are V8-serialized
    // too, and one sent while the header is faked would not read there.
    Serializer.prototype.writeHeader = realWriteHeader;
    const remote = await refused;
    expect(remote).toBeInstanceOf(ExecutorError);
    expect(remote.code).toBe('VALUE_FORMAT_UNSUPPORTED');
  });

  it("an older format is refused too: the worker's results would not read on this Node", () => {
    pretendFormat(supported - 1);
    expect(() => new IsolateExecutor({ workers: 1 })).toThrow(/format 14, and the codemode-worker speaks format 15/);
  });

  it("a Float16Array answer (Node 24 and 26 write one in format 15; the worker's V8 13.0 has none) is refused inside the sandbox, never misread", async () => {
    // What V8 13.6+ writes for new Float16Array([1.5, 2]) after the header: the buffer ('B', 4
    // bytes), then a view ('V') of subtag 'h', a subtag V8 13.0 does not know.
    const float16 = Buffer.from([0x42, 0x04, 0x00, 0x3e, 0x00, 0x40, 0x56, 0x68, 0x00, 0x04, 0x00]);
    if (typeof Float16Array === 'function') {
      // This Node has Float16Array: the bytes above are what it writes.
      const s = new Serializer();
      s.writeValue(new Float16Array([1.5, 2]));
      expect(s.releaseBuffer()).toEqual(float16);
    }
    const realWriteValue = Serializer.prototype.writeValue;
    const ex = executor({ workers: 1 });
    const out = await ex.execute({
      code: `async () => { try { return ['read', await t.answer()] } catch (e) { return ['rejected', e.message] } }`,
      providers: [{ name: 't', tools: ['answer'] }],
      dispatch: () => {
        // The next value this host writes is that Float16Array (restored as in the test below).
        Serializer.prototype.writeValue = function writeValue() {
          Serializer.prototype.writeValue = realWriteValue;
          this.writeRawBytes(float16);
          return true;
        };
        return 'replaced by a Float16Array';
      },
    });
    Serializer.prototype.writeValue = realWriteValue;
    expect(out.error).toBeUndefined();
    expect(out.result[0]).toBe('rejected');
    expect(out.result[1]).toMatch(/^The tool's answer could not be read/);
  });

  it('a tool answer in a newer format is refused inside the sandbox, never misread', async () => {
    const ex = executor({ workers: 1 });
    let calls = 0;
    const newer = await ex.execute({
      code: `async () => {
        const same = await t.answer();
        try { return [same, await t.answer()] } catch (e) { return [same, 'rejected: ' + e.message] }
      }`,
      providers: [{ name: 't', tools: ['answer'] }],
      dispatch: () => {
        calls += 1;
        if (calls === 2) {
          // Faked only while this answer is serialized (synchronously, right after dispatch
          // returns): vitest's own messages are V8-serialized too (see above).
          pretendFormat(supported + 1);
          queueMicrotask(() => {
            Serializer.prototype.writeHeader = realWriteHeader;
          });
        }
        return { n: calls };
      },
    });
    Serializer.prototype.writeHeader = realWriteHeader;
    expect(newer.error).toBeUndefined();
    expect(newer.result[0]).toEqual({ n: 1 });
    expect(newer.result[1]).toMatch(/^rejected: The tool's answer could not be read/);
  });
});
