// `node --import @supolka/cloudflare-codemode-executor/register`: the same as
// @supolka/codemode-executor/register (makes `cloudflare:workers` importable on Node).
import '@supolka/codemode-executor/register';
