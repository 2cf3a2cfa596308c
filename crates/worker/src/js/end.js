
  // The helpers the worker calls (run.rs).
  return {
    installProviders,
    describeThrow,
    typeName: (v) => (v === null ? 'null' : typeof v),
    runTimers,
    beginRun,
    allocBytes: (n) => new Uint8ArrayCtor(n),
  };
})
