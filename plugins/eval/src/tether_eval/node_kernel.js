// The JavaScript interpreter of tether-eval: one persistent vm context driven over stdio.
//
// host -> kernel (one JSON object per line):
//   {"type": "execute", "id": N, "code": "..."}
//   {"type": "tool_reply", "req": R, "result": {"is_error": bool, "content": [...], "meta": {}}}
// kernel -> host:
//   {"type": "ready", "pid": P, "node": "v20..."}
//   {"type": "stream", "id": N|null, "name": "stdout"|"stderr", "text": "..."}
//   {"type": "tool", "id": N, "req": R, "tool": "read", "args": {...}}
//   {"type": "done", "id": N, "value": "inspected value"|null, "error": "stack"|null,
//    "interrupted": bool}
// SIGINT interrupts the running cell (a synchronous loop via breakOnSigint, a pending await by
// abandoning it); the context and its variables survive.
'use strict';

const vm = require('node:vm');
const util = require('node:util');
const { Console } = require('node:console');
const { Writable } = require('node:stream');
const { createRequire, isBuiltin } = require('node:module');
const { pathToFileURL } = require('node:url');
const path = require('node:path');

const rawWrite = process.stdout.write.bind(process.stdout);
const CHUNK = 65536;
// the name cells call import() by (see importForCell)
const IMPORT_NAME = '__tetherImport';

function send(message) {
  rawWrite(JSON.stringify(message) + '\n');
}

let currentId = null;

function emit(name, text) {
  for (let i = 0; i < text.length; i += CHUNK) {
    send({ type: 'stream', id: currentId, name, text: text.slice(i, i + CHUNK) });
  }
}

function textOf(chunk, encoding) {
  if (typeof chunk === 'string') return chunk;
  const known = typeof encoding === 'string' && Buffer.isEncoding(encoding);
  return Buffer.from(chunk).toString(known ? encoding : 'utf8');
}

function streamFor(name) {
  return new Writable({
    write(chunk, encoding, callback) {
      emit(name, textOf(chunk, encoding));
      callback();
    },
  });
}

// Direct writes from cell code (process.stdout.write) become output, not protocol noise.
for (const name of ['stdout', 'stderr']) {
  process[name].write = (chunk, encoding, callback) => {
    emit(name, textOf(chunk, encoding));
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') done();
    return true;
  };
}

class ToolError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ToolError';
  }
}

class ToolResult {
  constructor(result) {
    this.content = result.content || [];
    this.isError = Boolean(result.is_error);
    this.meta = result.meta || {};
  }
  get text() {
    return this.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  }
  toString() {
    return this.text;
  }
  [util.inspect.custom]() {
    return `ToolResult(${util.inspect(this.text)})`;
  }
}

const pendingTools = new Map();
let nextReq = 1;
let toolQueue = Promise.resolve();

function tool(name, args) {
  if (typeof name !== 'string') {
    return Promise.reject(new TypeError('tool(): name must be a string'));
  }
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) {
    return Promise.reject(new TypeError('tool(): args must be an object'));
  }
  const req = nextReq++;
  const id = currentId;
  const promise = new Promise((resolve, reject) => {
    pendingTools.set(req, { resolve, reject, name });
  });
  // One request in flight at a time, like the Python side.
  toolQueue = toolQueue.then(() => {
    send({ type: 'tool', id, req, tool: name, args });
    return promise.catch(() => undefined);
  });
  return promise;
}

const workdir = process.cwd();
const sandbox = {
  console: new Console({ stdout: streamFor('stdout'), stderr: streamFor('stderr') }),
  require: createRequire(path.join(workdir, 'cell.js')),
  process,
  Buffer,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  AbortController,
  AbortSignal,
  structuredClone,
  queueMicrotask,
  setTimeout,
  clearTimeout,
  setInterval,
  clearInterval,
  setImmediate,
  clearImmediate,
  performance,
  fetch: globalThis.fetch,
  [IMPORT_NAME]: importForCell,
  tool,
  ToolError,
  ToolResult,
};
const context = vm.createContext(sandbox, { name: 'tether-eval' });
vm.runInContext('globalThis.global = globalThis;', context);

// Node's own parser, walker and REPL rewriter: present in every node since 16, reachable only
// with --expose-internals. Without them cells still run, minus redeclaration, top-level await
// and module imports.
let acorn = null;
let walk = null;
let processTopLevelAwait = null;
try {
  acorn = require('internal/deps/acorn/acorn/dist/acorn');
  walk = require('internal/deps/acorn/acorn-walk/dist/walk');
  ({ processTopLevelAwait } = require('internal/repl/await'));
} catch {
  acorn = null;
}

// import() from a cell: a vm script has no module loader of its own (node 20 refuses without
// --experimental-vm-modules), so cells call this one, which imports in the kernel's realm and
// resolves like a file in the current directory would: builtins, paths, then packages.
async function importForCell(specifier) {
  specifier = String(specifier);
  if (!isBuiltin(specifier) && !/^[a-z][a-z0-9+.-]*:/i.test(specifier)) {
    const base = path.join(process.cwd(), 'cell.js');
    if (/^\.{0,2}\//.test(specifier)) {
      specifier = pathToFileURL(path.resolve(path.dirname(base), specifier)).href;
    } else {
      try {
        specifier = pathToFileURL(createRequire(base).resolve(specifier)).href;
      } catch {
        // an ESM-only package require() cannot resolve: node's own resolution decides
      }
    }
  }
  return import(specifier);
}

function parseCell(code) {
  const options = { ecmaVersion: 'latest', allowAwaitOutsideFunction: true, allowHashBang: true };
  try {
    return acorn.parse(code, { ...options, sourceType: 'script' });
  } catch (err) {
    // `import x from 'y'` parses only as a module (strict mode); a script error stays the error
    if (!(err instanceof SyntaxError) || !/\bimport\b/.test(code)) throw err;
    try {
      return acorn.parse(code, { ...options, sourceType: 'module' });
    } catch {
      throw err;
    }
  }
}

// A static import becomes a dynamic one bound to `var`s, so its names persist like any other.
function importAsVar(node) {
  const from = `await ${IMPORT_NAME}(${node.source.raw})`;
  const named = [];
  let namespace = null;
  for (const spec of node.specifiers) {
    if (spec.type === 'ImportNamespaceSpecifier') namespace = spec.local.name;
    else if (spec.type === 'ImportDefaultSpecifier') named.push(`default: ${spec.local.name}`);
    else {
      const imported = spec.imported.type === 'Literal' ? spec.imported.raw : spec.imported.name;
      named.push(`${imported}: ${spec.local.name}`);
    }
  }
  if (namespace === null && named.length === 0) return `${from};`;
  if (namespace === null) return `var { ${named.join(', ')} } = ${from};`;
  const rest = named.length ? ` var { ${named.join(', ')} } = ${namespace};` : '';
  return `var ${namespace} = ${from};${rest}`;
}

// Top-level let/const/class become `var` so a cell can be run again without
// "Identifier has already been declared", and every declaration persists; imports, static or
// dynamic, go through importForCell.
function rewriteCell(code) {
  const ast = parseCell(code);
  const edits = [];
  for (const node of ast.body) {
    if (node.type === 'VariableDeclaration' && node.kind !== 'var') {
      edits.push([node.start, node.start + node.kind.length, 'var']);
    } else if (node.type === 'ClassDeclaration' && node.id) {
      edits.push([node.start, node.start, `var ${node.id.name} = `]);
      edits.push([node.end, node.end, ';']);
    } else if (node.type === 'ImportDeclaration') {
      edits.push([node.start, node.end, importAsVar(node)]);
    }
  }
  walk.full(ast, (node) => {
    if (node.type === 'ImportExpression') {
      edits.push([node.start, node.start + 'import'.length, IMPORT_NAME]);
    }
  });
  edits.sort((a, b) => b[0] - a[0]);
  for (const [start, end, text] of edits) {
    code = code.slice(0, start) + text + code.slice(end);
  }
  return code;
}

function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') &&
    typeof value.then === 'function';
}

let interruptCurrent = null;

process.on('SIGINT', () => {
  if (interruptCurrent) interruptCurrent();
});

function cleanStack(error) {
  // Errors thrown in the vm context come from another realm: no instanceof checks.
  if (!error || typeof error.stack !== 'string') {
    return `Uncaught ${util.inspect(error)}`;
  }
  const lines = error.stack.split('\n').filter(
    (line) => !/^\s+at /.test(line) ||
      (!line.includes(__filename) && !line.includes('node:internal') && !line.includes('node:vm')),
  );
  return lines.join('\n');
}

async function execute(id, code) {
  currentId = id;
  let value = null;
  let error = null;
  let interrupted = false;
  let source = code;
  let isAsync = false;
  try {
    // Parsing is the dearest step of a small cell: only code that may hold a top-level
    // declaration, an import or an await pays for it (a keyword inside a string just takes the
    // long way).
    if (acorn && /\b(let|const|class|import)\b/.test(code)) {
      try {
        source = rewriteCell(code);
      } catch (err) {
        if (err instanceof SyntaxError) {
          const where = err.loc ? ` (line ${err.loc.line}, column ${err.loc.column + 1})` : '';
          throw new SyntaxError(err.message.replace(/ \(\d+:\d+\)$/, '') + where);
        }
        throw err;
      }
    }
    if (processTopLevelAwait && /\bawait\b/.test(source)) {
      const wrapped = processTopLevelAwait(source);
      if (wrapped !== null) {
        source = wrapped;
        isAsync = true;
      }
    }
    const script = new vm.Script(source, { filename: `cell[${id}]` });
    let result = script.runInContext(context, { breakOnSigint: true, displayErrors: false });
    const stop = new Promise((_, reject) => {
      interruptCurrent = () => reject(Object.assign(new Error('interrupted'), { interrupt: true }));
    });
    stop.catch(() => undefined);
    if (isAsync) {
      result = await Promise.race([result, stop]);
      result = result ? result.value : undefined;
    }
    // A promise as the last expression is awaited: its value is the answer, its rejection the
    // cell's error (never an unhandled rejection surfacing in a later cell).
    if (isThenable(result)) {
      result = await Promise.race([result, stop]);
    }
    if (result !== undefined) {
      value = util.inspect(result, { depth: 4, maxArrayLength: 100, maxStringLength: 20000, breakLength: 100 });
    }
  } catch (err) {
    if ((err && err.interrupt) || (err && err.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')) {
      interrupted = true;
    } else {
      error = cleanStack(err);
    }
  } finally {
    interruptCurrent = null;
  }
  send({ type: 'done', id, value, error, interrupted });
  currentId = null;
}

let queue = Promise.resolve();
let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (data) => {
  buffer += data;
  let newline;
  while ((newline = buffer.indexOf('\n')) >= 0) {
    const line = buffer.slice(0, newline);
    buffer = buffer.slice(newline + 1);
    if (!line.trim()) continue;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      send({ type: 'stream', id: currentId, name: 'stderr', text: `[kernel: bad request line]\n` });
      continue;
    }
    if (message.type === 'tool_reply') {
      const waiter = pendingTools.get(message.req);
      if (!waiter) continue;
      pendingTools.delete(message.req);
      const result = message.result || {};
      if (result.is_error) {
        const text = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
        waiter.reject(new ToolError(text || `tool ${waiter.name} failed`));
      } else {
        waiter.resolve(new ToolResult(result));
      }
    } else if (message.type === 'execute') {
      queue = queue.then(() => execute(message.id, String(message.code)));
    }
  }
});
process.stdin.on('end', () => process.exit(0));

// A rejection nobody awaited must not kill the interpreter: report it as output instead.
process.on('unhandledRejection', (reason) => {
  emit('stderr', `Unhandled promise rejection: ${cleanStack(reason)}\n`);
});
process.on('uncaughtException', (err) => {
  emit('stderr', `Uncaught exception: ${cleanStack(err)}\n`);
});

send({ type: 'ready', pid: process.pid, node: process.version, rewriter: Boolean(acorn) });
