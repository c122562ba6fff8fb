// The committed bundle in dist/: one deterministic esbuild run (pinned version, fixed
// options, no timestamps, no absolute paths), so CI rebuilds it and diffs.
//   node scripts/build.mjs [OUTDIR]     (default: dist)
import { build } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(here, process.argv[2] ?? "dist");
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await build({
  absWorkingDir: here,
  entryPoints: { app: "src/main.ts" },
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox115", "safari16"],
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  sourcemap: false,
  metafile: false,
  logLevel: "warning",
  outdir: out,
});
await build({
  absWorkingDir: here,
  entryPoints: { app: "src/app.css" },
  bundle: true,
  minify: true,
  charset: "utf8",
  logLevel: "warning",
  outdir: out,
});
await copyFile(join(here, "index.html"), join(out, "index.html"));
