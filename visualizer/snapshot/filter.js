"use strict";
// The filter box's language, as visualizer/api/query.py parses it and visualizer/api/filters.py
// evaluates it (the same grammar, bounds and meaning; tests/visualizer/snapshot/filter_corpus.json
// holds both to one set of answers):
//   lr>0.01 and seed==3      optimizer=="adam"      not (state=="failed" or name~"^lr-")
// KEY OP VALUE (OP == != < <= > >= = ~), joined by and, or, not and parentheses; KEY name,
// state, created_at, config.KEY, summary.KEY or a bare KEY (the config's, else the summary's).
// Text that does not start with KEY OP is a name search (a regular expression, else plain text).

const FILTER_MAX_CHARS = 2000;
const FILTER_MAX_DEPTH = 32;
const FILTER_GRAMMAR = "KEY OP VALUE with OP one of == != < <= > >= (= is ==) or ~ (a regular " +
  "expression), joined by and, or, not and parentheses; KEY name, state, config.KEY, summary.KEY " +
  "or a bare KEY (the config's, else the summary's); VALUE a number, \"text\", true, false or null";
const FILTER_TOKEN = new RegExp(String.raw`\s*(?:([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\p{L}\p{N}_.]))` +
  String.raw`|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(==|!=|<=|>=|=|<|>|~|\(|\))` +
  String.raw`|([\p{L}_][\p{L}\p{N}_./-]*))`, "uy");
const FILTER_STARTS = /^\s*(?:(?:not\b|\()\s*)*[\p{L}_][\p{L}\p{N}_./-]*\s*(?:[=<>~]|!=)/iu;
const FILTER_OPS = { "==": "$eq", "=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt",
  ">=": "$gte", "~": "$regex" };
const FILTER_WORDS = { true: true, false: false, null: null, none: null };
const OWN_FIELDS = { name: "name", display_name: "name", state: "state", created_at: "created_at" };
const FIELD_PREFIXES = [["config.", "config"], ["summary.", "summary"], ["summary_metrics.", "summary"]];
const MISSING = Symbol("missing");

function filterError(text, why) {
  return new Error(`filter '${String(text).slice(0, 78)}': ${why}; accepted: ${FILTER_GRAMMAR}`);
}

function isExpression(text) {
  return text.length > FILTER_MAX_CHARS || FILTER_STARTS.test(text);
}

function filterTokens(text) {
  const tokens = [];
  const kinds = ["num", "str", "op", "word"];
  let at = 0;
  while (text.slice(at).trim()) {
    FILTER_TOKEN.lastIndex = at;
    const found = FILTER_TOKEN.exec(text);
    const group = found ? [1, 2, 3, 4].find((g) => found[g] !== undefined) : undefined;
    if (group === undefined) {
      const where = text.length - text.slice(at).trimStart().length;
      throw filterError(text, `'${text[where]}' (character ${where + 1}) starts no key, operator or value`);
    }
    const token = found[group];
    tokens.push([kinds[group - 1], token, found.index + found[0].length - token.length]);
    at = FILTER_TOKEN.lastIndex;
  }
  return tokens;
}

// The W&B-style filters dict ``text`` says (the form filters.py evaluates); Error of one line.
function parseFilter(text) {
  if (text.length > FILTER_MAX_CHARS) throw filterError(text, `longer than ${FILTER_MAX_CHARS} characters`);
  const tokens = filterTokens(text);
  let at = 0;
  const error = (why) => at < tokens.length ?
    filterError(text, `${why} at '${tokens[at][1].slice(0, 18)}' (character ${tokens[at][2] + 1})`) :
    filterError(text, `${why} at the end`);
  const word = (...words) => {
    if (at < tokens.length && tokens[at][0] === "word" && words.includes(tokens[at][1].toLowerCase())) {
      at += 1;
      return true;
    }
    return false;
  };
  const isOp = (op) => at < tokens.length && tokens[at][0] === "op" && tokens[at][1] === op;
  const joined = (op, parts) => parts.length === 1 ? parts[0] : { [op]: parts };
  const value = () => {
    if (at >= tokens.length || tokens[at][0] === "op") throw error("expected a value");
    const [kind, token] = tokens[at];
    at += 1;
    if (kind === "num") return Number(token);
    if (kind === "str") return token.slice(1, -1).replace(/\\([\\"'])/g, "$1");
    const lower = token.toLowerCase();
    return Object.hasOwn(FILTER_WORDS, lower) ? FILTER_WORDS[lower] : token;
  };
  const comparison = () => {
    if (at >= tokens.length || tokens[at][0] !== "word") throw error("expected a key");
    const key = tokens[at][1];
    at += 1;
    if (at >= tokens.length || !Object.hasOwn(FILTER_OPS, tokens[at][1])) {
      throw error(`expected an operator after '${key}'`);
    }
    const op = FILTER_OPS[tokens[at][1]];
    at += 1;
    const operand = value();
    if (op === "$regex" && typeof operand !== "string") throw error("~ takes a text value");
    return onField(key, { [op]: operand });
  };
  const one = (depth) => {
    if (depth >= FILTER_MAX_DEPTH) throw error(`nested more than ${FILTER_MAX_DEPTH} deep`);
    if (word("not")) return { $nor: [one(depth + 1)] };
    if (isOp("(")) {
      at += 1;
      const inside = either(depth + 1);
      if (!isOp(")")) throw error("expected )");
      at += 1;
      return inside;
    }
    return comparison();
  };
  const every = (depth) => {
    const parts = [one(depth)];
    while (word("and")) parts.push(one(depth));
    return joined("$and", parts);
  };
  const either = (depth) => {
    const parts = [every(depth)];
    while (word("or")) parts.push(every(depth));
    return joined("$or", parts);
  };
  const result = either(0);
  if (at < tokens.length) throw error("expected and, or or the end");
  return result;
}

// A bare key is the config's when the run has it, else the summary's.
function onField(key, condition) {
  if (Object.hasOwn(OWN_FIELDS, key) || FIELD_PREFIXES.some(([p]) => key.startsWith(p))) {
    return { [key]: condition };
  }
  const config = `config.${key}`, summary = `summary.${key}`;
  return { $or: [
    { $and: [{ [config]: { $exists: true } }, { [config]: condition }] },
    { $and: [{ [config]: { $exists: false } }, { [summary]: condition }] },
  ] };
}

// ``value[path]``, else the dotted path followed into nested objects; MISSING if none.
function dig(value, path) {
  if (value === null || typeof value !== "object") return MISSING;
  if (Object.hasOwn(value, path)) return value[path];
  const parts = path.split(".");
  for (let i = 1; i < parts.length; i += 1) {
    const head = parts.slice(0, i).join(".");
    if (Object.hasOwn(value, head)) {
      const found = dig(value[head], parts.slice(i).join("."));
      if (found !== MISSING) return found;
    }
  }
  return MISSING;
}

function fieldGetter(text, field) {
  if (Object.hasOwn(OWN_FIELDS, field)) return (run) => run[OWN_FIELDS[field]];
  for (const [prefix, part] of FIELD_PREFIXES) {
    if (field.startsWith(prefix) && field.length > prefix.length) {
      const path = field.slice(prefix.length);
      return (run) => dig(run[part], path);
    }
  }
  throw filterError(text, `${field}: no such field`);
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2}(?::\d{2}(?:\.\d+)?)?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

// created_at's text (W&B's ISO 8601, UTC unless it says) as Unix seconds, the field's own form.
function inSeconds(text, operand) {
  if (typeof operand !== "string") return operand;
  const found = ISO_TIME.exec(operand);
  const when = found ? Date.parse(operand.replace(" ", "T") + (found[1] ? "" : (operand.length > 10 ? "Z" : ""))) : NaN;
  if (Number.isNaN(when)) {
    throw filterError(text, "created_at is compared with a time, e.g. '2026-01-31T12:00:00Z'");
  }
  return when / 1000;
}

// Python's comparisons: numbers (true, false as 1, 0) with numbers, text with text.
function comparable(a, b) {
  const number = (v) => typeof v === "number" || typeof v === "boolean";
  if (number(a) && number(b)) return [Number(a), Number(b)];
  return typeof a === "string" && typeof b === "string" ? [a, b] : null;
}

function same(a, b) {
  const pair = comparable(a, b);
  return pair ? pair[0] === pair[1] : a === b;
}

function conditionTest(text, field, op, operand) {
  if (field === "created_at") operand = inSeconds(text, operand);
  const ordered = (compare) => (value) => {
    const pair = value === MISSING ? null : comparable(value, operand);
    return pair !== null && compare(pair[0], pair[1]);
  };
  switch (op) {
    case "$eq": return (value) => value !== MISSING && same(value, operand);
    case "$ne": return (value) => value === MISSING || !same(value, operand);
    case "$gt": return ordered((a, b) => a > b);
    case "$gte": return ordered((a, b) => a >= b);
    case "$lt": return ordered((a, b) => a < b);
    case "$lte": return ordered((a, b) => a <= b);
    case "$exists": return (value) => (value !== MISSING) === Boolean(operand);
    case "$regex": {
      let pattern;
      try {
        pattern = new RegExp(operand, "u");
      } catch (err) {
        throw filterError(text, `not a regular expression (${err.message})`);
      }
      return (value) => typeof value === "string" && pattern.test(value);
    }
    default: throw filterError(text, `unknown operator ${op}`);
  }
}

// A test of a run's fields ({name, state, created_at, config, summary}) for the parsed dict.
function compileFilter(text, filters) {
  const tests = Object.entries(filters).map(([field, condition]) => {
    if (field === "$and" || field === "$or" || field === "$nor") {
      const parts = condition.map((part) => compileFilter(text, part));
      if (field === "$and") return (run) => parts.every((test) => test(run));
      if (field === "$or") return (run) => parts.some((test) => test(run));
      return (run) => !parts.some((test) => test(run));
    }
    const get = fieldGetter(text, field);
    const [[op, operand]] = Object.entries(condition);
    const test = conditionTest(text, field, op, operand);
    return (run) => test(get(run));
  });
  return (run) => tests.every((test) => test(run));
}

// What the filter box's ``text`` keeps of a run's fields: an expression, else a name search
// (a regular expression ignoring case, else plain text). Error of one line for a bad one.
function runFilter(text) {
  if (text.trim() === "") return () => true;
  if (isExpression(text)) return compileFilter(text, parseFilter(text));
  let pattern = null;
  try {
    pattern = new RegExp(text.trim(), "iu");
  } catch (err) {
    pattern = null;
  }
  return pattern ? (run) => pattern.test(run.name) : nameHolds(text);
}

// Whether a run's name holds ``text``, plain, in any case.
function nameHolds(text) {
  const lowered = text.trim().toLowerCase();
  return (run) => String(run.name).toLowerCase().includes(lowered);
}
