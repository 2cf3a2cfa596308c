// The ESM entry: the same objects as the CommonJS one (index.js), by name.
import root from '@supolka/codemode-executor';

export const { IsolateExecutor, CodemodeExecutor, ExecutorError, connect, serve, failureCatalog, register, codeModeTool, bundleModules, createMcpGateway } = root;
export default root;
