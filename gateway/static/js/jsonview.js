// Pretty-prints a JSON text, or any prefix of one while it streams, as syntax-highlighted DOM nodes.
//
// The lexer reads the text once: punctuation, strings (possibly still open), numbers and literals.
// Keys and values are told apart by a stack of open containers, so an object key is coloured as a
// key before its colon arrives. Text that cannot be JSON is shown as-is, marked as an error.

const INDENT = "  ";
const LITERALS = ["true", "false", "null"];
const NUMBER = /-?(\d+(\.\d*)?([eE][+-]?\d*)?)?/y;
const WORD = /[a-z]+/y;

function match(re, text, i) {
  re.lastIndex = i;
  const m = re.exec(text);
  return m ? m[0] : "";
}

// Tokens of a JSON prefix: {kind: "punct"|"string"|"number"|"literal"|"error", text, open?}.
export function lex(text) {
  const tokens = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (" \t\r\n".includes(c)) { i++; continue; }
    if ("{}[]:,".includes(c)) { tokens.push({ kind: "punct", text: c }); i++; continue; }
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const closed = j < text.length;
      tokens.push({ kind: "string", text: text.slice(i, Math.min(j + 1, text.length)), open: !closed });
      i = Math.min(j + 1, text.length);
      continue;
    }
    const number = match(NUMBER, text, i);
    if (number) { tokens.push({ kind: "number", text: number }); i += number.length; continue; }
    const word = match(WORD, text, i);
    if (word && LITERALS.some((l) => l.startsWith(word))) { tokens.push({ kind: "literal", text: word }); i += word.length; continue; }
    tokens.push({ kind: "error", text: text.slice(i) });
    break;
  }
  return tokens;
}

function span(parent, cls, text) {
  const node = document.createElement("span");
  node.className = cls;
  node.textContent = text;
  parent.appendChild(node);
}

// Renders `text` into `target` (replacing its children). Returns {complete, error}: complete when
// a whole value was read and every container closed.
export function renderJson(target, text) {
  const frag = document.createDocumentFragment();
  const stack = []; // "{" or "["
  let expectKey = false;
  let pendingBreak = false;
  let previous = null;
  let error = false;
  let values = 0;
  const newline = () => frag.appendChild(document.createTextNode("\n" + INDENT.repeat(stack.length)));
  for (const token of lex(text)) {
    if (token.kind === "error") { span(frag, "j-error", token.text); error = true; break; }
    if (token.kind === "punct") {
      const t = token.text;
      if (t === "{" || t === "[") {
        if (pendingBreak) newline();
        span(frag, "j-punct", t);
        stack.push(t);
        expectKey = t === "{";
        pendingBreak = true;
      } else if (t === "}" || t === "]") {
        stack.pop();
        if (!(previous && previous.kind === "punct" && (previous.text === "{" || previous.text === "["))) newline();
        span(frag, "j-punct", t);
        pendingBreak = false;
        if (stack.length === 0) values++;
      } else if (t === ",") {
        span(frag, "j-punct", ",");
        expectKey = stack[stack.length - 1] === "{";
        pendingBreak = true;
      } else {
        span(frag, "j-punct", ": ");
        expectKey = false;
      }
    } else {
      if (pendingBreak) newline();
      pendingBreak = false;
      const isKey = token.kind === "string" && expectKey;
      span(frag, isKey ? "j-key" : `j-${token.kind}`, token.text);
      if (!isKey && stack.length === 0 && !token.open) values++;
    }
    previous = token;
  }
  target.replaceChildren(frag);
  return { complete: !error && values > 0 && stack.length === 0, error };
}
