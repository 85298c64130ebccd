// A small JSON Schema validator for the common keywords, and a shape check for schemas typed by hand.
//
// validate(schema, value) -> [{path, message}] (empty when valid). Covered: type, enum, const,
// properties, required, additionalProperties, patternProperties, min/maxProperties, items,
// prefixItems, min/maxItems, uniqueItems, contains, min/maxLength, pattern, format (date,
// date-time, time, email, uuid, ipv4, uri), minimum, maximum, exclusiveMinimum/Maximum,
// multipleOf, allOf, anyOf, oneOf, not, if/then/else, $ref to "#..." (also $defs/definitions).

const TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"];
const FORMATS = {
  date: /^\d{4}-\d{2}-\d{2}$/,
  "date-time": /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/,
  time: /^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$/,
  email: /^[^@\s]+@[^@\s]+$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  ipv4: /^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$/,
  uri: /^[a-zA-Z][a-zA-Z0-9+.-]*:\S*$/,
};

export function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

// JSON equality: objects by their keys regardless of order.
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",")}}`;
  }
  return JSON.stringify(value);
}

function resolveRef(root, ref) {
  if (!ref.startsWith("#")) throw new Error(`only local $ref is supported: ${ref}`);
  let node = root;
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    const part = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    node = node == null ? undefined : node[part];
  }
  if (node === undefined) throw new Error(`$ref ${ref} points nowhere`);
  return node;
}

const isType = (value, type) => type === "number" ? typeof value === "number" : typeOf(value) === type;
const codePoints = (s) => [...s].length;

function checkGeneric(ctx, schema, value, path) {
  const { errors } = ctx;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => isType(value, t))) errors.push({ path, message: `expected ${types.join(" or ")}, got ${typeOf(value)}` });
  }
  if (schema.enum && !schema.enum.some((e) => canonical(e) === canonical(value))) {
    errors.push({ path, message: `not one of ${JSON.stringify(schema.enum)}` });
  }
  if ("const" in schema && canonical(schema.const) !== canonical(value)) errors.push({ path, message: `must be ${JSON.stringify(schema.const)}` });
}

function checkCombinators(ctx, schema, value, path) {
  const passes = (sub) => validateAt(ctx.root, sub, value, path).length === 0;
  for (const sub of schema.allOf || []) walk(ctx, sub, value, path);
  if (schema.anyOf && !schema.anyOf.some(passes)) ctx.errors.push({ path, message: "matches none of anyOf" });
  if (schema.oneOf) {
    const count = schema.oneOf.filter(passes).length;
    if (count !== 1) ctx.errors.push({ path, message: `matches ${count} of oneOf, needs exactly 1` });
  }
  if (schema.not !== undefined && passes(schema.not)) ctx.errors.push({ path, message: "matches the schema in not" });
  if (schema.if !== undefined) {
    const branch = passes(schema.if) ? schema.then : schema.else;
    if (branch !== undefined) walk(ctx, branch, value, path);
  }
}

function checkObject(ctx, schema, value, path) {
  const keys = Object.keys(value);
  for (const name of schema.required || []) {
    if (!(name in value)) ctx.errors.push({ path, message: `missing required property "${name}"` });
  }
  const props = schema.properties || {};
  const patterns = Object.entries(schema.patternProperties || {}).map(([p, s]) => [new RegExp(p, "u"), s]);
  for (const key of keys) {
    const sub = `${path}.${key}`;
    let matched = key in props;
    if (matched) walk(ctx, props[key], value[key], sub);
    for (const [re, s] of patterns) {
      if (re.test(key)) { matched = true; walk(ctx, s, value[key], sub); }
    }
    if (!matched && schema.additionalProperties !== undefined) {
      if (schema.additionalProperties === false) ctx.errors.push({ path, message: `property "${key}" is not allowed` });
      else walk(ctx, schema.additionalProperties, value[key], sub);
    }
  }
  if (schema.minProperties !== undefined && keys.length < schema.minProperties) ctx.errors.push({ path, message: `fewer than ${schema.minProperties} properties` });
  if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) ctx.errors.push({ path, message: `more than ${schema.maxProperties} properties` });
}

function checkArray(ctx, schema, value, path) {
  const prefix = schema.prefixItems || (Array.isArray(schema.items) ? schema.items : []);
  const rest = Array.isArray(schema.items) ? schema.additionalItems : schema.items;
  value.forEach((item, i) => {
    const sub = i < prefix.length ? prefix[i] : rest;
    if (sub === false) ctx.errors.push({ path, message: `item ${i} is not allowed` });
    else if (sub !== undefined) walk(ctx, sub, item, `${path}[${i}]`);
  });
  if (schema.minItems !== undefined && value.length < schema.minItems) ctx.errors.push({ path, message: `fewer than ${schema.minItems} items` });
  if (schema.maxItems !== undefined && value.length > schema.maxItems) ctx.errors.push({ path, message: `more than ${schema.maxItems} items` });
  if (schema.uniqueItems && new Set(value.map(canonical)).size !== value.length) ctx.errors.push({ path, message: "items are not unique" });
  if (schema.contains !== undefined && !value.some((item) => validateAt(ctx.root, schema.contains, item, path).length === 0)) {
    ctx.errors.push({ path, message: "no item matches contains" });
  }
}

function checkString(ctx, schema, value, path) {
  const length = codePoints(value);
  if (schema.minLength !== undefined && length < schema.minLength) ctx.errors.push({ path, message: `shorter than ${schema.minLength}` });
  if (schema.maxLength !== undefined && length > schema.maxLength) ctx.errors.push({ path, message: `longer than ${schema.maxLength}` });
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) ctx.errors.push({ path, message: `does not match /${schema.pattern}/` });
  const format = FORMATS[schema.format];
  if (format && !format.test(value)) ctx.errors.push({ path, message: `not a valid ${schema.format}` });
}

function checkNumber(ctx, schema, value, path) {
  const fail = (message) => ctx.errors.push({ path, message });
  if (schema.minimum !== undefined && value < schema.minimum) fail(`less than ${schema.minimum}`);
  if (schema.maximum !== undefined && value > schema.maximum) fail(`greater than ${schema.maximum}`);
  if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) fail(`not greater than ${schema.exclusiveMinimum}`);
  if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) fail(`not less than ${schema.exclusiveMaximum}`);
  if (schema.multipleOf !== undefined) {
    const q = value / schema.multipleOf;
    if (Math.abs(q - Math.round(q)) > 1e-9) fail(`not a multiple of ${schema.multipleOf}`);
  }
}

function walk(ctx, schema, value, path) {
  if (schema === true || schema === undefined) return;
  if (schema === false) { ctx.errors.push({ path, message: "no value is allowed here" }); return; }
  if (ctx.depth++ > 200) throw new Error("schema recursion is too deep");
  if (schema.$ref !== undefined) walk(ctx, resolveRef(ctx.root, schema.$ref), value, path);
  checkGeneric(ctx, schema, value, path);
  checkCombinators(ctx, schema, value, path);
  const type = typeOf(value);
  if (type === "object") checkObject(ctx, schema, value, path);
  else if (type === "array") checkArray(ctx, schema, value, path);
  else if (type === "string") checkString(ctx, schema, value, path);
  else if (type === "number" || type === "integer") checkNumber(ctx, schema, value, path);
  ctx.depth--;
}

function validateAt(root, schema, value, path) {
  const ctx = { root, errors: [], depth: 0 };
  walk(ctx, schema, value, path);
  return ctx.errors;
}

export function validate(schema, value) {
  return validateAt(schema, schema, value, "$");
}

// Mistakes in a schema typed by hand (wrong keyword types, unknown types, broken $ref), as messages.
export function checkSchema(schema, path = "$", root = schema, out = []) {
  if (typeof schema === "boolean") return out;
  if (typeOf(schema) !== "object") { out.push(`${path}: a schema must be an object or a boolean`); return out; }
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type];
  for (const t of types) if (!TYPES.includes(t)) out.push(`${path}.type: unknown type ${JSON.stringify(t)}`);
  for (const key of ["properties", "patternProperties", "$defs", "definitions"]) {
    if (schema[key] === undefined) continue;
    if (typeOf(schema[key]) !== "object") { out.push(`${path}.${key}: must be an object`); continue; }
    for (const [name, sub] of Object.entries(schema[key])) checkSchema(sub, `${path}.${key}.${name}`, root, out);
  }
  for (const key of ["items", "additionalProperties", "additionalItems", "not", "contains", "if", "then", "else"]) {
    if (schema[key] !== undefined && !Array.isArray(schema[key])) checkSchema(schema[key], `${path}.${key}`, root, out);
  }
  for (const key of ["allOf", "anyOf", "oneOf", "prefixItems"]) {
    if (schema[key] === undefined) continue;
    if (!Array.isArray(schema[key]) || schema[key].length === 0) { out.push(`${path}.${key}: must be a non-empty array`); continue; }
    schema[key].forEach((sub, i) => checkSchema(sub, `${path}.${key}[${i}]`, root, out));
  }
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === "string"))) {
    out.push(`${path}.required: must be an array of property names`);
  }
  if (schema.enum !== undefined && !Array.isArray(schema.enum)) out.push(`${path}.enum: must be an array`);
  for (const key of ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]) {
    if (schema[key] !== undefined && !(Number.isInteger(schema[key]) && schema[key] >= 0)) out.push(`${path}.${key}: must be a non-negative integer`);
  }
  if (schema.pattern !== undefined) {
    try { new RegExp(schema.pattern, "u"); } catch (e) { out.push(`${path}.pattern: ${e.message}`); }
  }
  if (schema.$ref !== undefined) {
    try { resolveRef(root, schema.$ref); } catch (e) { out.push(`${path}.$ref: ${e.message}`); }
  }
  return out;
}
