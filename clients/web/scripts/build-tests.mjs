// The tests as Node.js modules: test/*.test.ts (unit), test/browser/*.e2e.ts (Chromium) and
// test/connect/*.e2e.ts (every RPC over each protocol, @connectrpc/connect-node),
// bundled by esbuild into OUTDIR (default .test-build, gitignored) for `node --test`.
import { build } from "esbuild";
import { readdir, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(here, process.argv[2] ?? ".test-build");
const entries = [
  ...(await readdir(join(here, "test"))).filter((f) => f.endsWith(".test.ts")).map((f) => `test/${f}`),
  ...(await readdir(join(here, "test", "browser"))).filter((f) => f.endsWith(".e2e.ts")).map((f) => `test/browser/${f}`),
  ...(await readdir(join(here, "test", "connect"))).filter((f) => f.endsWith(".e2e.ts")).map((f) => `test/connect/${f}`),
];
await rm(out, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: entries,
  outbase: "test",
  outdir: out,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["playwright-core"],
  logLevel: "warning",
});
