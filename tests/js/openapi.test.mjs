// docs/openapi.yaml against the OpenAPI 3.1 schema (@seriousme/openapi-schema-validator, which
// also parses the YAML and checks that every $ref resolves), and against the sources it
// describes: the router's public table (api/detail/routes.cpp, `table[]`, plus one POST per
// entry of config/endpoints.hpp's `endpoints::all`) and the error catalogue (api/errors.cpp).
// Unlike the other files here it needs no engine, and does not import env.mjs.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Validator } from '@seriousme/openapi-schema-validator';

const root = new URL('../../', import.meta.url);
const source = (path) => readFileSync(fileURLToPath(new URL(path, root)), 'utf8');
const docPath = fileURLToPath(new URL('docs/openapi.yaml', root));

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
// Routes that answer without the error envelope, or only with it for readiness.
const NO_ERROR_ENVELOPE = new Set(['/healthz', '/readyz', '/metrics', '/ui', '/ui/']);
// Routes that answer with a redirect, not a 2xx.
const REDIRECTS = new Set(['/ui']);

const validator = new Validator();
const validation = await validator.validate(docPath);
const doc = validator.specification;

/// The object a local `$ref` ("#/components/...") points at.
function resolve(node) {
  if (!node || typeof node.$ref !== 'string') return node;
  assert.ok(node.$ref.startsWith('#/'), `only local references are used: ${node.$ref}`);
  let target = doc;
  for (const part of node.$ref.slice(2).split('/')) {
    target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  assert.ok(target !== undefined, `unresolved reference ${node.$ref}`);
  return resolve(target);
}

function* operations() {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      if (item[method]) yield { path, method, item, op: item[method] };
    }
  }
}

/// The text between `open` and the next "};" in `text`.
function block(text, open, what) {
  const start = text.indexOf(open);
  assert.ok(start >= 0, `${what}: '${open}' not found; update this test's parser`);
  const end = text.indexOf('};', start);
  return text.slice(start, end);
}

/// The (METHOD path) pairs the public router serves, read from the sources.
function routerTable() {
  const routes = block(source('api/detail/routes.cpp'), 'route_def table[]', 'routes.cpp');
  const pairs = [...routes.matchAll(/\{http::verb::(\w+?)_?, "([^"]+)", route_\w+\}/g)].map(
    ([, verb, path]) => `${verb.toUpperCase()} ${path}`,
  );
  assert.ok(pairs.length > 0, 'no route found in api/detail/routes.cpp');
  for (const path of inferenceEndpoints()) pairs.push(`POST ${path}`);
  return pairs;
}

function inferenceEndpoints() {
  const all = block(source('config/endpoints.hpp'), 'all = {{', 'endpoints.hpp');
  const paths = [...all.matchAll(/\{kind::\w+, "([^"]+)"/g)].map((m) => m[1]);
  assert.ok(paths.length > 0, 'no endpoint found in config/endpoints.hpp');
  return paths;
}

/// code → HTTP status, from api/errors.cpp's table.
function errorCatalogue() {
  const table = block(source('api/errors.cpp'), 'error_info, ', 'errors.cpp');
  const codes = new Map([...table.matchAll(/\{"(\w+)", (\d{3}),/g)].map((m) => [m[1], +m[2]]));
  assert.ok(codes.size > 0, 'no error code found in api/errors.cpp');
  return codes;
}

/// Where a Reference Object (outside a Schema, which may extend a `$ref`) has fields that
/// OpenAPI 3.1 ignores: only `summary` and `description` may override the target's.
function* ignoredRefSiblings(node, at) {
  if (!node || typeof node !== 'object') return;
  if (typeof node.$ref === 'string') {
    for (const key of Object.keys(node)) {
      if (!['$ref', 'summary', 'description'].includes(key)) yield `${at}/${key}`;
    }
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === 'schema' || key === 'schemas' || key === 'examples' || key === 'example') continue;
    yield* ignoredRefSiblings(value, `${at}/${key}`);
  }
}

test('docs/openapi.yaml is a valid OpenAPI 3.1 document', () => {
  assert.ok(
    validation.valid,
    `the validator refused docs/openapi.yaml:\n${JSON.stringify(validation.errors, null, 2)}`,
  );
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(validator.version, '3.1');
  const ids = [...operations()].map(({ op }) => op.operationId);
  assert.ok(ids.every(Boolean), 'every operation has an operationId');
  assert.equal(new Set(ids).size, ids.length, `operationIds are unique: ${ids}`);
  assert.deepEqual([...ignoredRefSiblings(doc, '#')], [], 'fields beside a $ref are ignored');
});

test('its paths and methods are exactly the public router table', () => {
  const documented = [...operations()].map(({ path, method }) => `${method.toUpperCase()} ${path}`);
  assert.equal(new Set(documented).size, documented.length);
  assert.deepEqual([...documented].sort(), routerTable().sort());
  for (const path of Object.keys(doc.paths)) {
    assert.ok(!/^\/(v1\/task|internal)\//.test(path), `internal route ${path} is not public`);
  }
});

test('every operation has a 2xx and an error response in the Error envelope', () => {
  const errorSchema = '#/components/schemas/Error';
  for (const { path, method, op } of operations()) {
    const where = `${method.toUpperCase()} ${path}`;
    const codes = Object.keys(op.responses ?? {});
    const success = REDIRECTS.has(path) ? /^3(\d\d|XX)$/ : /^2(\d\d|XX)$/;
    assert.ok(codes.some((c) => success.test(c)), `${where}: no ${REDIRECTS.has(path) ? '3xx' : '2xx'} response`);
    if (NO_ERROR_ENVELOPE.has(path)) continue;
    const enveloped = codes.filter((c) => {
      if (!/^[45](\d\d|XX)$/.test(c)) return false;
      const schema = resolve(op.responses[c]).content?.['application/json']?.schema;
      return schema?.$ref === errorSchema;
    });
    assert.ok(enveloped.length > 0, `${where}: no 4xx/5xx response with the Error schema`);
  }
});

test('every path parameter is declared, required, and named in its path', () => {
  for (const { path, method, item, op } of operations()) {
    const where = `${method.toUpperCase()} ${path}`;
    const declared = [...(item.parameters ?? []), ...(op.parameters ?? [])]
      .map(resolve)
      .filter((p) => p.in === 'path');
    const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    for (const name of inTemplate) {
      const p = declared.find((d) => d.name === name);
      assert.ok(p, `${where}: path parameter {${name}} is not declared`);
      assert.equal(p.required, true, `${where}: {${name}} must be required`);
    }
    for (const p of declared) {
      assert.ok(inTemplate.includes(p.name), `${where}: parameter ${p.name} is not in the path`);
    }
  }
});

test('error codes are the catalogue of api/errors.cpp, each under its own status', () => {
  const catalogue = errorCatalogue();
  const codeEnum = doc.components.schemas.Error.properties.error.properties.code.enum;
  assert.deepEqual([...codeEnum].sort(), [...catalogue.keys()].sort());
  for (const { path, method, op } of operations()) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (!/^[45]\d\d$/.test(status)) continue;
      const description = response.description ?? resolve(response).description ?? '';
      for (const [, word] of description.matchAll(/`([a-z_]+)`/g)) {
        if (!catalogue.has(word)) continue;
        assert.equal(
          catalogue.get(word),
          +status,
          `${method.toUpperCase()} ${path}: '${word}' is listed under ${status}`,
        );
      }
    }
  }
});

test('the inference endpoints are config/endpoints.hpp\'s list', () => {
  assert.deepEqual(doc.components.schemas.InferenceEndpoint.enum, inferenceEndpoints());
});
