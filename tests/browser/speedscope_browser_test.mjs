// inprof's speedscope files in the real speedscope app: headless Chromium loads the app as
// its npm package ships it (dist/release) and a file the writer made from a hand-built
// profile (speedscope_fixture.cpp), both served from a loopback HTTP server
// (index.html#profileURL=...). The test then reads what the app shows: the profile list
// (threads and their CPU time), the hover tooltips of the time-ordered flame chart (frames,
// file:line, one column per sample in time order), the sandwich table (total and self time
// per function), and a screenshot that must not be blank.
//
//   node speedscope_browser_test.mjs FIXTURE WORKDIR
//
// CHROMIUM overrides the browser (default /usr/bin/chromium). Exits 0 on success, 1 with a
// message per failed check.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateSync } from 'node:zlib';
import { check, expectEqual, finish, launchBrowser, watchPage } from './browser_checks.mjs';

const [fixture, workdir] = process.argv.slice(2);
if (!fixture || !workdir) {
  console.error('usage: node speedscope_browser_test.mjs FIXTURE WORKDIR');
  process.exit(2);
}


// ---- The file ------------------------------------------------------------------------------

mkdirSync(workdir, { recursive: true });
const profilePath = path.join(workdir, 'demo.cpu.speedscope.json');
const made = spawnSync(fixture, [profilePath], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
if (made.status !== 0) {
  console.error(`${fixture} failed (${made.status}): ${made.stderr}`);
  process.exit(1);
}
const file = JSON.parse(readFileSync(profilePath, 'utf8'));

const here = path.dirname(fileURLToPath(import.meta.url));
const appDir = path.join(here, 'node_modules', 'speedscope', 'dist', 'release');

// The schema speedscope publishes, as the package ships it, checked with the JSON Schema
// keywords it uses (draft-07: $ref, type, const, enum, required, properties, items, anyOf).
function validate(value, schema, root, where, errors) {
  if (schema.$ref) {
    schema = schema.$ref.slice(2).split('/').reduce((node, key) => node[key], root);
  }
  if (schema.anyOf) {
    if (!schema.anyOf.some((s) => { const e = []; validate(value, s, root, where, e); return e.length === 0; })) {
      errors.push(`${where}: matches none of anyOf`);
    }
    return;
  }
  const type = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  if (schema.type && schema.type !== type) errors.push(`${where}: ${type}, expected ${schema.type}`);
  if ('const' in schema && value !== schema.const) errors.push(`${where}: not ${JSON.stringify(schema.const)}`);
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${where}: ${JSON.stringify(value)} not in enum`);
  if (type === 'object') {
    for (const key of schema.required || []) if (!(key in value)) errors.push(`${where}: no ${key}`);
    for (const [key, sub] of Object.entries(schema.properties || {})) {
      if (key in value) validate(value[key], sub, root, `${where}.${key}`, errors);
    }
  }
  if (type === 'array' && schema.items) value.forEach((v, i) => validate(v, schema.items, root, `${where}[${i}]`, errors));
}
{
  const schema = JSON.parse(readFileSync(path.join(appDir, 'file-format-schema.json'), 'utf8'));
  const errors = [];
  validate(file, schema, schema, '$', errors);
  check(errors.length === 0, `the file follows speedscope's file-format-schema.json${errors.length ? ': ' + errors.slice(0, 5).join('; ') : ''}`);
}

// What the fixture built: these do not come from the file.
const threads = ['main-loop (tid 101)', 'worker-7 (tid 107)'];
const functions = {
  'main-loop (tid 101)': ['main', 'event_loop()', 'handle_request(Request&)', 'parse_header(std::string_view)'],
  'worker-7 (tid 107)': ['worker_main(void*)', 'compress_block(Block const&)', 'crc32_update'],
};
// The innermost frame of each signal's sample, in time order.
const leaves = {
  'main-loop (tid 101)': ['event_loop()', 'handle_request(Request&)', 'parse_header(std::string_view)',
    'handle_request(Request&)', 'parse_header(std::string_view)', 'event_loop()', 'handle_request(Request&)'],
  'worker-7 (tid 107)': ['compress_block(Block const&)', 'crc32_update', 'crc32_update', 'compress_block(Block const&)',
    'crc32_update', 'crc32_update', 'compress_block(Block const&)', 'crc32_update', 'compress_block(Block const&)',
    'crc32_update', 'crc32_update', 'compress_block(Block const&)', 'crc32_update'],
};
const location = {
  main: '/src/demo/main.cpp:12',
  'event_loop()': '/src/demo/loop.cpp:40',
  'handle_request(Request&)': '/src/demo/handler.cpp:88',
  'parse_header(std::string_view)': '/src/demo/parse.h:17',
  'worker_main(void*)': '/src/demo/worker.cpp:9',
  'compress_block(Block const&)': '/src/demo/compress.cpp:120',
  crc32_update: '/src/demo/crc.cpp:33',
};
expectEqual(file.profiles.map((p) => p.name), threads, 'profiles in the file');

// speedscope's own number formats (src/lib/value-formatters.ts, src/lib/utils.ts).
function formatTime(ns) {
  const s = ns * 1e-9;
  if (s >= 1) return `${s.toFixed(2)}s`;
  if (s / 1e-3 >= 1) return `${(s / 1e-3).toFixed(2)}ms`;
  if (s / 1e-6 >= 1) return `${(s / 1e-6).toFixed(2)}µs`;
  return `${(s / 1e-9).toFixed(2)}ns`;
}
function formatPercent(p) {
  if (p === 100) return '100%';
  if (p > 99) return '>99%';
  if (p < 0.01) return '<0.01%';
  if (p < 1) return `${p.toFixed(2)}%`;
  if (p < 10) return `${p.toFixed(1)}%`;
  return `${p.toFixed(0)}%`;
}

// Per profile, from the file: stacks as names in time order, total, and per function the
// total (once per sample, however often it recurs) and self time.
function summary(profile) {
  const names = profile.samples.map((stack) => stack.map((i) => file.shared.frames[i].name));
  const total = profile.weights.reduce((a, b) => a + b, 0);
  const perFunction = {};
  names.forEach((stack, i) => {
    for (const name of new Set(stack)) (perFunction[name] ??= { total: 0, self: 0 }).total += profile.weights[i];
    perFunction[stack.at(-1)].self += profile.weights[i];
  });
  return { names, total, perFunction };
}
const summaries = Object.fromEntries(file.profiles.map((p) => [p.name, summary(p)]));
for (const name of threads) {
  expectEqual(Object.keys(summaries[name].perFunction).sort(), [...functions[name]].sort(), `functions of ${name} in the file`);
  expectEqual(summaries[name].names.map((s) => s.at(-1)), leaves[name], `samples of ${name} in time order in the file`);
}

// ---- The app -------------------------------------------------------------------------------

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.wasm': 'application/wasm', '.woff2': 'font/woff2', '.png': 'image/png', '.ico': 'image/x-icon' };
const server = createServer((req, res) => {
  const name = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
  const target = name === '/demo.cpu.speedscope.json' ? profilePath : path.join(appDir, path.normalize(name));
  if (!target.startsWith(appDir + path.sep) && target !== profilePath) {
    res.writeHead(403).end();
    return;
  }
  try {
    const body = readFileSync(target);
    res.writeHead(200, { 'content-type': types[path.extname(target)] || 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await launchBrowser();

try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 700 } });
  const { errors, foreign } = watchPage(
    page, (url) => url.startsWith(origin + '/') || url.startsWith('data:'));

  const profileUrl = `${origin}/demo.cpu.speedscope.json`;
  await page.goto(`${origin}/index.html#profileURL=${encodeURIComponent(profileUrl)}`);

  // The toolbar names the profile shown and its place in the list: the file's
  // activeProfileIndex, the thread with the most CPU time.
  const toolbar = page.locator('span', { hasText: /\(\d+\/\d+\)$/ }).first();
  await toolbar.waitFor({ timeout: 30000 });
  expectEqual(await toolbar.textContent(), `${threads[1]} (2/2)`, 'toolbar shows worker-7 first');
  expectEqual(await page.title(), `${file.name} - speedscope`, 'window title is the file\'s name');

  // The profile list (shown on hover): every thread, in file order, with its CPU time.
  await toolbar.hover();
  const list = page.locator('table', { has: page.locator('th', { hasText: 'Total Weight' }) });
  await list.waitFor({ state: 'visible' });
  const rows = await list.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  expectEqual(rows, threads.map((name, i) => [String(i + 1), name, formatTime(summaries[name].total)]),
    'profile list: threads and their CPU time');
  check(rows.length === 2 && rows[0][2] === '70.00ms' && rows[1][2] === '130.00ms', 'main-loop had 70 ms, worker-7 130 ms');

  // Hover tooltips of the time-ordered flame chart: "weight (share) name" and "file:line".
  const tooltipAt = async (x, y) => {
    await page.mouse.move(x, y);
    return page.evaluate(() => {
      const tip = [...document.querySelectorAll('div')].find((d) => d.style.left && d.style.top && d.querySelector('span'));
      if (!tip) return null;
      const body = tip.firstElementChild;
      const weight = body.querySelector('span').textContent;
      const where = body.querySelector('div')?.textContent ?? '';
      const name = body.textContent.slice(weight.length, body.textContent.length - where.length).trim();
      return { name, where };
    });
  };
  const chart = async () => {
    const boxes = await page.evaluate(() => [...document.querySelectorAll('canvas')]
      .map((c) => c.getBoundingClientRect()).map((r) => ({ x: r.x, y: r.y, width: r.width, height: r.height })));
    // The flame chart is the tallest canvas below the toolbar (the one at y 0 is an overlay).
    return boxes.reduce((best, b) => (b.y > 0 && b.height > (best?.height ?? 0) ? b : best), null);
  };
  // Rows: scanned once down the first sample, then one hover per row and sample.
  let rootRowY = 0;
  const timeOrder = async (name) => {
    const { names, total } = summaries[name];
    const weights = file.profiles.find((p) => p.name === name).weights;
    const box = await chart();
    const centers = [];
    let before = 0;
    for (const w of weights) {
      centers.push(box.x + (box.width * (before + w / 2)) / total);
      before += w;
    }
    const bands = [];
    for (let y = box.y; y < box.y + 200; y += 2) {
      const tip = await tooltipAt(centers[0], y);
      if (!tip) continue;
      if (!bands.length || bands.at(-1).name !== tip.name) bands.push({ name: tip.name, from: y, to: y });
      else bands.at(-1).to = y;
    }
    if (bands.length < 2) return { error: `rows not found: ${JSON.stringify(bands)}` };
    const first = (bands[0].from + bands[0].to) / 2;
    rootRowY = first;
    const pitch = bands[1].from - bands[0].from;
    const stacks = [];
    const wheres = {};
    for (const x of centers) {
      const stack = [];
      for (let row = 0; ; row++) {
        const tip = await tooltipAt(x, first + row * pitch);
        if (!tip) break;
        stack.push(tip.name);
        wheres[tip.name] = tip.where;
      }
      stacks.push(stack);
    }
    return { stacks, wheres, expected: names };
  };
  const checkTimeOrder = async (name) => {
    const seen = await timeOrder(name);
    if (seen.error) {
      check(false, `time order of ${name}: ${seen.error}`);
      return;
    }
    expectEqual(seen.stacks, seen.expected, `time order of ${name}: each sample's stack, root first, in time order`);
    expectEqual(seen.stacks.map((s) => s.at(-1)), leaves[name], `time order of ${name}: leaves as the fixture sampled them`);
    for (const fn of functions[name]) expectEqual(seen.wheres[fn], location[fn], `tooltip of ${fn}: file:line`);
  };
  await checkTimeOrder(threads[1]);

  // The sandwich view's table: total and self time per function, file as the row's title.
  const tab = async (label) => page.locator('div', { hasText: new RegExp(`^.{0,3}${label}$`) }).last().click();
  const sandwich = async (name) => {
    await tab('Sandwich');
    const table = page.locator('table', { has: page.locator('td[title]') }).last();
    await table.waitFor();
    const seen = await table.locator('tr').evaluateAll((trs) => trs.map((tr) => ({
      total: tr.cells[0].textContent,
      self: tr.cells[1].textContent,
      file: tr.cells[2].title,
      name: tr.cells[2].textContent,
    })));
    seen.sort((a, b) => a.name.localeCompare(b.name));
    const { total, perFunction } = summaries[name];
    const expected = functions[name].map((fn) => ({
      total: `${formatTime(perFunction[fn].total)} (${formatPercent((100 * perFunction[fn].total) / total)})`,
      self: `${formatTime(perFunction[fn].self)} (${formatPercent((100 * perFunction[fn].self) / total)})`,
      file: location[fn].replace(/:\d+$/, ''),
      name: fn,
    })).sort((a, b) => a.name.localeCompare(b.name));
    expectEqual(seen, expected, `sandwich table of ${name}`);
    await tab('Time Order');
  };
  await sandwich(threads[1]);

  // Switch thread through the profile list, as a user would.
  await toolbar.hover();
  await list.locator('tbody tr', { hasText: threads[0] }).click();
  await page.mouse.move(650, 400);
  await page.waitForFunction((want) => [...document.querySelectorAll('span')].some((s) => s.textContent === want),
    `${threads[0]} (1/2)`);
  check(true, 'profile list switches to main-loop');
  await sandwich(threads[0]);
  await checkTimeOrder(threads[0]);

  // The screenshot: the time-ordered flame chart of main-loop, decoded and looked at.
  await page.mouse.move(1, 1);
  const pngPath = path.join(workdir, 'speedscope-main-loop.png');
  writeFileSync(pngPath, await page.screenshot());
  const image = decodePng(readFileSync(pngPath));
  expectEqual([image.width, image.height], [1300, 700], 'screenshot size');
  const colours = new Map();
  let painted = 0;
  for (let i = 0; i < image.width * image.height; i++) {
    const [r, g, b] = image.pixel(i);
    const key = (r << 16) | (g << 8) | b;
    colours.set(key, (colours.get(key) || 0) + 1);
    if (r < 245 || g < 245 || b < 245) painted++;
  }
  const share = painted / (image.width * image.height);
  check(colours.size >= 20, `screenshot has ${colours.size} colours (at least 20: boxes, text, axis)`);
  check(share > 0.05, `screenshot is ${(100 * share).toFixed(1)}% painted (more than 5%: not blank)`);
  // The first row of boxes (main, the whole width) is coloured, not background.
  let coloured = 0;
  for (let x = 10; x < 1290; x += 10) {
    const [r, g, b] = image.pixel(Math.round(rootRowY) * image.width + x);
    if (Math.max(r, g, b) - Math.min(r, g, b) > 20) coloured++;
  }
  check(coloured > 100, `the root row is coloured across the chart (${coloured} of 128 points)`);

  check(errors.length === 0, `no script errors${errors.length ? ': ' + errors.join('; ') : ''}`);
  check(foreign.length === 0, `nothing loaded from elsewhere${foreign.length ? ': ' + foreign.join(', ') : ''}`);
} finally {
  await browser.close();
  server.close();
}

// A PNG decoder for Chromium's screenshots: 8-bit RGB or RGBA, not interlaced.
function decodePng(data) {
  if (data.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let offset = 8;
  let width = 0, height = 0, channels = 0;
  const idat = [];
  while (offset < data.length) {
    const length = data.readUInt32BE(offset);
    const type = data.toString('latin1', offset + 4, offset + 8);
    const body = data.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      if (body[8] !== 8 || body[12] !== 0) throw new Error('unsupported PNG (bit depth or interlace)');
      channels = { 2: 3, 6: 4 }[body[9]];
      if (!channels) throw new Error(`unsupported PNG colour type ${body[9]}`);
    } else if (type === 'IDAT') {
      idat.push(body);
    }
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[y * stride + i - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = y > 0 && i >= channels ? out[(y - 1) * stride + i - channels] : 0;
      let v = line[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = v & 0xff;
    }
  }
  return { width, height, pixel: (i) => [out[i * channels], out[i * channels + 1], out[i * channels + 2]] };
}

finish();
