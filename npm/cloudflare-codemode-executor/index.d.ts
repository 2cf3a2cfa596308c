// The types of @supolka/codemode-executor, which this package re-exports.
export * from '@supolka/codemode-executor';
