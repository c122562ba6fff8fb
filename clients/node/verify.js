#!/usr/bin/env node
// An independent verifier of ofc hand histories, in plain JavaScript (Node's built-ins only),
// written from docs/hand-history.md, the ofc-shuffle-v1 spec and the rules: every check of
// `ofc verify`, with the same discrepancy codes and locations (see README.md).
//
//   node verify.js [options] HISTORY...       a file, a folder (every *.json under it), or -
//   node verify.js --match HISTORY... [--feed FEED.jsonl]
//
// Options: -j N / --jobs N (worker threads, default every core), -q / --quiet (only failures,
// notes and the summary), --match, --feed FILE, --check-policy, --expect-ruleset SPEC,
// --json (one JSON object per line: {source, ok, code, location, message, notes}).
// Exit status: 0 every history verified, 1 a discrepancy, 2 a file that cannot be read or
// is not a hand history (MALFORMED_HISTORY), one newer than this verifier reads
// (NEWER_FORMAT_VERSION), or a bad option.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');

const shuffle = require('./lib/shuffle');
const { cardCode } = require('./lib/cards');
const { Discrepancy, FORMAT_VERSIONS, UNREADABLE, checkDocument, checkHand } = require('./lib/history');
const { feedRecord, formatMatchDiscrepancy, readFeed, verifyMatch } = require('./lib/match');
const { resolveRuleset } = require('./lib/rules');

const USAGE = `usage: node verify.js [-j N] [-q] [--json] [--check-policy] [--expect-ruleset RULESET]
                        [--match [--feed FEED.jsonl]] HISTORY [HISTORY ...]
  HISTORY   a hand history (bare, or GetHandHistory's response as protobuf JSON); a folder:
            every *.json under it; - for standard input
  -j N, --jobs N          verify in N worker threads (default: every core)
  -q, --quiet             print only failures, notes and the summary
  --match                 the histories are one table's hands: also check them as one chain
  --feed FEED.jsonl       with --match: the settlement feed's records to check against the hands
  --check-policy          note that timeout policies are not re-run by this verifier
  --expect-ruleset SPEC   also require these ruleset parameters (a preset name, or a JSON
                          object of overrides such as '{"preset": "classic", "loss_cap": 30}')
  --json                  one JSON object per line instead of text
`;

class UsageError extends Error {}

function parseArgs(argv) {
  const options = { jobs: os.availableParallelism ? os.availableParallelism() : os.cpus().length, quiet: false, match: false, feed: null, checkPolicy: false, expect: null, json: false, paths: [] };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      i += 1;
      return argv[i];
    };
    if (arg === '-h' || arg === '--help') options.help = true;
    else if (arg === '-j' || arg === '--jobs') options.jobs = Number(value());
    else if (/^-j\d+$/.test(arg)) options.jobs = Number(arg.slice(2));
    else if (arg.startsWith('--jobs=')) options.jobs = Number(arg.slice(7));
    else if (arg === '-q' || arg === '--quiet') options.quiet = true;
    else if (arg === '--match') options.match = true;
    else if (arg === '--feed') options.feed = value();
    else if (arg.startsWith('--feed=')) options.feed = arg.slice(7);
    else if (arg === '--check-policy') options.checkPolicy = true;
    else if (arg === '--expect-ruleset') options.expect = value();
    else if (arg.startsWith('--expect-ruleset=')) options.expect = arg.slice(17);
    else if (arg === '--json') options.json = true;
    else if (arg === '--') options.paths.push(...argv.slice(i + 1)), (i = argv.length);
    else if (arg.startsWith('-') && arg !== '-') throw new UsageError(`unknown option ${arg}`);
    else options.paths.push(arg);
  }
  if (options.help) return options;
  if (!Number.isInteger(options.jobs) || options.jobs < 1) throw new UsageError('-j must be at least 1');
  if (options.feed !== null && !options.match) throw new UsageError('--feed needs --match');
  if (!options.paths.length) throw new UsageError('give at least one HISTORY');
  return options;
}

function expectedRuleset(spec) {
  if (spec === null) return null;
  if (!spec.trimStart().startsWith('{')) return resolveRuleset(spec);
  let parsed;
  try {
    parsed = JSON.parse(spec);
  } catch (error) {
    throw new UsageError(`--expect-ruleset is not JSON: ${error.message}`);
  }
  return resolveRuleset(parsed);
}

/** Path order as Python sorts pathlib paths: part by part, each by code point (UTF-8 bytes
 *  sort so; JavaScript's `<` compares UTF-16 units, which puts U+1F600 before U+FF01). */
function byParts(a, b) {
  const x = a.split(path.sep);
  const y = b.split(path.sep);
  for (let k = 0; k < Math.min(x.length, y.length); k += 1) {
    if (x[k] !== y[k]) return Buffer.compare(Buffer.from(x[k]), Buffer.from(y[k]));
  }
  return x.length - y.length;
}

/** The files named *.json under `dir`, as `ofc verify` takes them: subfolders searched (not
 *  through links to folders), a link to a file followed, a folder named *.json or a
 *  dangling link left out. */
function jsonFiles(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...jsonFiles(full));
    else if (entry.name.endsWith('.json') && isFile(full)) found.push(full);
  }
  return found;
}

function isFile(file) {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function expandPaths(args) {
  const paths = [];
  for (const arg of args) {
    let isDir = false;
    try {
      isDir = arg !== '-' && fs.statSync(arg).isDirectory();
    } catch {
      isDir = false;
    }
    if (isDir) paths.push(...jsonFiles(arg).sort(byParts));
    else paths.push(arg);
  }
  return paths;
}

function readInput(file) {
  return fs.readFileSync(file === '-' ? 0 : file);
}

const reasonOf = (error) => (error.code === 'ENOENT' ? 'No such file or directory' : error.code === 'EISDIR' ? 'Is a directory' : error.code === 'EACCES' ? 'Permission denied' : error.message);

/**
 * One file: {status, lines: [[toStderr, text]], record} (record: the --json form). The lines
 * are those `ofc verify` prints; `prefix` is "FILE: " when several files are verified.
 */
function verifyFile(file, prefix, options) {
  let text;
  try {
    text = readInput(file);
  } catch (error) {
    const message = `cannot read ${file}: ${reasonOf(error)}`;
    return { status: 2, lines: [[true, `error: ${prefix}INVALID_INPUT: ${message}`]], record: { source: file, ok: false, code: 'INVALID_INPUT', location: '', message, notes: [] } };
  }
  const { discrepancy, notes } = checkDocument(text, { expectedRuleset: options.expectedRuleset, checkPolicy: options.checkPolicy });
  const record = {
    source: file,
    ok: discrepancy === null,
    code: discrepancy && discrepancy.code,
    location: discrepancy && discrepancy.location,
    message: discrepancy && discrepancy.message,
    notes,
  };
  const noteLines = notes.map((n) => [false, `${prefix}note: ${n}`]);
  if (discrepancy === null) return { status: 0, lines: [[false, `${prefix}OK`], ...noteLines], record };
  if (UNREADABLE.has(discrepancy.code)) return { status: 2, lines: [[true, `error: ${prefix}${discrepancy}`]], record };
  return { status: 1, lines: [[false, `${prefix}${discrepancy}`]], record };
}

/** Verify `paths` in `jobs` worker threads; results in the order of `paths`. */
function verifyInWorkers(paths, jobs, options) {
  return new Promise((resolve, reject) => {
    const results = new Array(paths.length);
    let running = jobs;
    for (let w = 0; w < jobs; w += 1) {
      const indexes = [];
      for (let k = w; k < paths.length; k += jobs) indexes.push(k);
      const worker = new Worker(__filename, { workerData: { paths: indexes.map((k) => paths[k]), options: { checkPolicy: options.checkPolicy, expect: options.expect } } });
      worker.on('message', ({ i, result }) => {
        results[indexes[i]] = result;
      });
      worker.on('error', reject);
      worker.on('exit', (code) => {
        if (code !== 0) reject(new Error(`a worker thread exited with status ${code}`));
        running -= 1;
        if (running === 0) resolve(results);
      });
    }
  });
}

function emit(lines, quiet, out) {
  for (const [toStderr, text] of lines) {
    if (quiet && !toStderr && text.endsWith(': OK')) continue;
    (toStderr ? out.err : out.out).push(text);
  }
}

async function runFiles(paths, options, out) {
  if (paths.length === 1 && !options.json) {
    const r = verifyFile(paths[0], '', options);
    emit(r.lines, false, out);
    return r.status;
  }
  const results =
    options.jobs <= 1 || paths.length < 2 * options.jobs
      ? paths.map((p) => verifyFile(p, `${p}: `, options))
      : await verifyInWorkers(paths, options.jobs, options);
  let status = 0;
  let verified = 0;
  for (const r of results) {
    status = Math.max(status, r.status);
    verified += r.status === 0;
    if (options.json) {
      if (!(options.quiet && r.record.ok)) out.out.push(JSON.stringify(r.record));
    } else {
      emit(r.lines, options.quiet, out);
    }
  }
  const summary = `${verified} verified, ${paths.length - verified} failed`;
  out.out.push(options.json ? JSON.stringify({ summary, verified, failed: paths.length - verified }) : summary);
  return status;
}

function runMatch(paths, options, out) {
  let status = 0;
  const histories = [];
  for (const file of paths) {
    try {
      histories.push([file, readInput(file)]);
    } catch (error) {
      out.err.push(`error: INVALID_INPUT: cannot read ${file}: ${reasonOf(error)}`);
      status = 2;
    }
  }
  let feed = null;
  if (options.feed !== null) {
    try {
      feed = readFeed(readInput(options.feed), options.feed);
    } catch (error) {
      out.err.push(`error: INVALID_INPUT: cannot read the feed ${options.feed}: ${error.code ? reasonOf(error) : error.message}`);
      return 2;
    }
  }
  const report = verifyMatch(histories, feed, { expectedRuleset: options.expectedRuleset, checkPolicy: options.checkPolicy });
  for (const d of report.discrepancies) {
    const unreadable = UNREADABLE.has(d.code);
    status = Math.max(status, unreadable ? 2 : 1);
    if (options.json) out.out.push(JSON.stringify(d));
    else if (unreadable) out.err.push(`error: ${formatMatchDiscrepancy(d)}`);
    else out.out.push(formatMatchDiscrepancy(d));
  }
  if (!options.json) for (const note of report.notes) out.out.push(`note: ${note}`);
  const failed = report.hands - report.verified;
  const chained = report.discrepancies.length - failed;
  const summary = `${report.verified} verified, ${failed} failed; the match of ${report.hands} hands: ${chained} chain discrepancies`;
  out.out.push(options.json ? JSON.stringify({ summary, verified: report.verified, failed, hands: report.hands, chain_discrepancies: chained, notes: report.notes }) : summary);
  return status;
}

async function main(argv) {
  const out = { out: [], err: [] };
  let status;
  try {
    const options = parseArgs(argv);
    if (options.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    options.expectedRuleset = expectedRuleset(options.expect);
    const paths = expandPaths(options.paths);
    status = options.match ? runMatch(paths, options, out) : await runFiles(paths, options, out);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${USAGE}verify.js: error: ${error.message}\n`);
      return 2;
    }
    if (error.reason) {
      process.stderr.write(`error: ${error.reason}${error.field ? ` at ${error.field}` : ''}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (out.err.length) process.stderr.write(out.err.join('\n') + '\n');
  if (out.out.length) process.stdout.write(out.out.join('\n') + '\n');
  return status;
}

if (!isMainThread && workerData && workerData.paths) {
  // A worker thread: verify its share of the files, one message per file.
  const options = { checkPolicy: workerData.options.checkPolicy, expectedRuleset: expectedRuleset(workerData.options.expect) };
  workerData.paths.forEach((p, i) => parentPort.postMessage({ i, result: verifyFile(p, `${p}: `, options) }));
} else if (require.main === module) {
  main(process.argv.slice(2)).then((status) => {
    process.exitCode = status;
  });
}

module.exports = {
  ALGORITHM: shuffle.ALGORITHM,
  Discrepancy,
  FORMAT_VERSIONS,
  block: shuffle.block,
  blockMessage: shuffle.blockMessage,
  cardCode,
  checkDocument,
  checkHand,
  choice: shuffle.choice,
  commitment: shuffle.commitment,
  feedRecord,
  main,
  shuffleDeck: shuffle.shuffleDeck,
  verifyMatch,
  wordStream: shuffle.wordStream,
};
