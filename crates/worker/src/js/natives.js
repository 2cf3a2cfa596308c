// The worker's native bindings (natives.rs, web.rs) and the failure texts they come with. This
// module is evaluated on its own first; the worker then copies its bindings into `natives`,
// before any other runtime module runs.
export const natives = {};
