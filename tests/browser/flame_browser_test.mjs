// The flame graph's script in a real browser: headless Chromium loads an SVG that
// `inprof flame` wrote, and the test hovers, clicks to zoom, searches and resets, checking
// each result against what the folded input says it must be.
//
//   node flame_browser_test.mjs INPROF FOLDED WORKDIR
//
// CHROMIUM overrides the browser (default /usr/bin/chromium). Exits 0 on success, 1 with a
// message on the first failed check.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, expectEqual, finish, launchBrowser, watchPage } from './browser_checks.mjs';

const [inprof, foldedPath, workdir] = process.argv.slice(2);
if (!inprof || !foldedPath || !workdir) {
  console.error('usage: node flame_browser_test.mjs INPROF FOLDED WORKDIR');
  process.exit(2);
}


// ---- What the folded input says ------------------------------------------------------------

// Frame names as the graph shows them: colour-hint suffixes removed, as the reader does.
function frameName(text) {
  return text.replace(/_\[[ikjw]\]$/, '');
}
const stacks = readFileSync(foldedPath, 'utf8').split('\n').filter((l) => l.trim() !== '').map((line) => {
  const space = line.lastIndexOf(' ');
  return { frames: line.slice(0, space).split(';').map(frameName), count: Number(line.slice(space + 1)) };
});

// Samples whose stack starts with `prefix`, and of those, the ones with a frame matching `re`.
function share(prefix, re) {
  let total = 0;
  let matched = 0;
  for (const { frames, count } of stacks) {
    if (prefix.some((name, i) => frames[i] !== name)) continue;
    total += count;
    if (frames.some((name) => re.test(name))) matched += count;
  }
  return { total, matched };
}
// The graph's own rounding: "Matched: 12.3%", or exactly "100%".
function matchedText({ total, matched }) {
  const pct = (100 * matched) / total;
  return `Matched: ${pct === 100 ? '100' : pct.toFixed(1)}%`;
}

// ---- The graph -------------------------------------------------------------------------------

mkdirSync(workdir, { recursive: true });
const svgPath = path.join(workdir, 'browser.svg');
const made = spawnSync(inprof, ['flame', '--minwidth', '0', '--title', 'browser test', '-o', svgPath, foldedPath], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
});
if (made.status !== 0) {
  console.error(`inprof flame failed (${made.status}): ${made.stderr}`);
  process.exit(1);
}
const svgUrl = pathToFileURL(svgPath).href;

const browser = await launchBrowser();

try {
  const page = await browser.newPage({ viewport: { width: 1300, height: 700 } });
  const { errors, foreign } = watchPage(page, (url) => url.split('?')[0] === svgUrl);
  let answer = null;
  page.on('dialog', async (dialog) => {
    if (dialog.type() === 'prompt' && answer !== null) await dialog.accept(answer);
    else await dialog.dismiss();
  });
  await page.goto(svgUrl);
  await page.waitForFunction(() => typeof fg !== 'undefined' && fg.frames.length > 0);

  // Boxes as the page has them, by name and depth.
  const box = (name, depth) =>
    page.evaluate(
      ([name, depth]) => {
        const f = fg.frames.find((f) => nameOf(f) === name && f.d === depth);
        if (!f) return null;
        return {
          x: parseFloat(f.rect.getAttribute('x')),
          width: parseFloat(f.rect.getAttribute('width')),
          hidden: f.g.classList.contains('hide'),
          parent: f.g.classList.contains('parent'),
          fill: f.rect.getAttribute('fill'),
          label: f.text.textContent,
          title: titleOf(f),
        };
      },
      [name, depth],
    );
  const text = (id) => page.evaluate((id) => {
    const e = document.getElementById(id);
    return { text: e.textContent, hidden: e.classList.contains('hide') };
  }, id);
  const clickBox = async (name, depth) => {
    const handle = await page.evaluateHandle(
      ([name, depth]) => fg.frames.find((f) => nameOf(f) === name && f.d === depth).rect,
      [name, depth],
    );
    const r = await handle.asElement().boundingBox();
    await page.mouse.click(r.x + r.width / 2, r.y + r.height / 2);
  };
  const fullWidth = await page.evaluate(() => fg.width - 2 * fg.xpad);

  // Hover: the details line shows the function, its samples and its share.
  const runBefore = await box('run', 2);
  const total = share([], /$^/).total;
  const runCount = share(['main', 'run'], /$^/).total;
  const runPct = ((100 * runCount) / total).toFixed(2);
  expectEqual(runBefore.title, `run (${runCount} samples, ${runPct}%)`, 'title of main;run');
  {
    const handle = await page.evaluateHandle(() => fg.frames.find((f) => nameOf(f) === 'run' && f.d === 2).rect);
    await handle.asElement().hover();
    expectEqual((await text('details')).text, `Function: run (${runCount} samples, ${runPct}%)`, 'hover details');
  }

  // Click: main;run fills the width, its callers stay (faded, full width), the rest hides.
  const siblingBefore = await box('parse_config', 2);
  await clickBox('run', 2);
  const run = await box('run', 2);
  expectEqual(run.width, fullWidth, 'zoomed box is full width');
  expectEqual(run.hidden, false, 'zoomed box is shown');
  const main = await box('main', 1);
  check(main.parent && !main.hidden && main.width === fullWidth, 'caller main stays shown, full width, faded');
  const all = await box('all', 0);
  check(all.parent && !all.hidden && all.width === fullWidth, 'root stays shown, full width, faded');
  expectEqual((await box('parse_config', 2)).hidden, true, 'sibling parse_config is hidden');
  expectEqual((await box('shutdown', 2)).hidden, true, 'sibling shutdown is hidden');
  expectEqual((await box('worker', 1)).hidden, true, 'other root worker is hidden');
  // The first std::sqrt box is the one under compute<double> (children are in name order).
  const sqrt = await box('std::sqrt', 4);
  const sqrtShare = share(['main', 'run', 'compute<double>', 'std::sqrt'], /$^/).total / runCount;
  check(Math.abs(sqrt.width - fullWidth * sqrtShare) < 0.01 && !sqrt.hidden,
        `callee std::sqrt scaled to the zoom (${sqrt.width} px)`);
  expectEqual((await text('unzoom')).hidden, false, 'Reset Zoom is shown');

  // Search while zoomed: the share is of the zoomed box's samples.
  answer = '^compute<';
  await page.click('#search');
  const compute = new RegExp(answer);
  expectEqual((await text('matched')).text, matchedText(share(['main', 'run'], compute)), 'matched share in zoom');
  expectEqual((await box('compute<double>', 3)).fill, 'rgb(230,0,230)', 'matches are highlighted');
  expectEqual((await text('search')).text, 'Reset Search', 'search button turns into Reset Search');

  // Reset zoom: every box back where it was; the share is now of all samples.
  await page.click('#unzoom');
  const runAfter = await box('run', 2);
  check(runAfter.x === runBefore.x && runAfter.width === runBefore.width && !runAfter.parent,
        'Reset Zoom restores main;run');
  const siblingAfter = await box('parse_config', 2);
  check(!siblingAfter.hidden && siblingAfter.width === siblingBefore.width, 'Reset Zoom shows parse_config again');
  expectEqual(siblingAfter.label, siblingBefore.label, 'labels restored');
  expectEqual((await text('unzoom')).hidden, true, 'Reset Zoom is hidden again');
  expectEqual((await text('matched')).text, matchedText(share([], compute)), 'matched share of everything');

  // A regular expression with alternation and an anchor, matching nested boxes (std::sqrt under
  // compute) and an inlined frame: every sample counts once.
  await page.click('#search'); // Reset Search
  expectEqual((await text('matched')).hidden, true, 'Reset Search hides the share');
  check((await box('compute<double>', 3)).fill !== 'rgb(230,0,230)', 'Reset Search restores colours');
  answer = 'sqrt$|^compute|push_back|^fwrite$';
  await page.click('#search');
  expectEqual((await text('matched')).text, matchedText(share([], new RegExp(answer))), 'matched share, regex');

  // Ctrl-F searches too; a search that matches everything reads exactly 100%.
  await page.click('#search');
  answer = '.';
  await page.keyboard.press('Control+f');
  expectEqual((await text('matched')).text, 'Matched: 100%', 'Ctrl-F search matching everything');

  check(errors.length === 0, `no script errors${errors.length ? ': ' + errors.join('; ') : ''}`);
  check(foreign.length === 0, `nothing loaded besides the SVG${foreign.length ? ': ' + foreign.join(', ') : ''}`);
} finally {
  await browser.close();
}

finish();
