// What a Deno host preloads to make `cloudflare:workers` importable before its entry links
// (`deno run -A --preload ./preload-register.mjs app.mjs`): Deno's --preload takes a file.
import '@supolka/codemode-executor/register';
