// The timeline page in a real browser: headless Chromium loads the page `inprof timeline`
// wrote for a perf script text with known times (written here: 3 s of samples; `burst` runs
// on two threads from 1.3 s to 1.6 s), and the test checks that the heat map shows the burst
// in its cells, then selects ranges as a user does (two clicks, a drag) and checks the flame
// graph the page draws: `burst` holds its share, and it is the very graph the command the
// page prints draws, byte for byte.
//
//   node timeline_browser_test.mjs INPROF WORKDIR
//
// CHROMIUM overrides the browser (default /usr/bin/chromium). Exits 0 on success, 1 with a
// message on the first failed check.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, expectEqual, finish, launchBrowser, watchPage } from './browser_checks.mjs';

const [inprof, workdir] = process.argv.slice(2);
if (!inprof || !workdir) {
  console.error('usage: node timeline_browser_test.mjs INPROF WORKDIR');
  process.exit(2);
}


// ---- The input: perf script output with known times ------------------------------------------

// One sample per millisecond slot k of 3 s, at 12345.000200 + k ms: thread app (tid 100) runs
// work every 10 ms; from 1.3 s to 1.6 s it runs burst every millisecond (work every 25th) and
// thread helper (tid 101) runs burst too, with an inlined leaf. So [1.3, 1.6) has 600 samples,
// 588 in burst (98 %); its 20 ms cells weigh 40 samples, every other cell 2.
const PERIOD = 1000000;
function burstPerfScript() {
  const out = [];
  const sample = (comm, tid, cpu, us, leafFirst) => {
    const s = Math.floor(us / 1e6);
    const frac = String(us % 1e6).padStart(6, '0');
    out.push(`${comm} 100/${tid} [${String(cpu).padStart(3, '0')}] ${s}.${frac}: ${PERIOD} cpu-clock: \n`);
    leafFirst.forEach((frame, i) => out.push(`\t${(0x5000 + 16 * i).toString(16)} ${frame}\n`));
    out.push('\n');
  };
  const work = ['work+0x4 (/opt/app/bin/app)', 'main+0x10 (/opt/app/bin/app)', '[unknown] ([unknown])'];
  for (let k = 0; k < 3000; k++) {
    const us = 12345000200 + k * 1000;
    if (k >= 1300 && k < 1600) {
      if (k % 25 === 0) {
        sample('app', 100, 0, us, work);
      } else {
        sample('app', 100, 0, us, [
          'std::map<int, int>::find(int const&)+0x8 (/opt/app/bin/app)',
          'burst+0x10 (/opt/app/bin/app)',
          'main+0x10 (/opt/app/bin/app)',
          '[unknown] ([unknown])',
        ]);
      }
      sample('helper', 101, 1, us + 100, [
        'step (inlined)',
        'burst+0x10 (/opt/app/bin/app)',
        'helper_main+0x2 (/opt/app/bin/app)',
      ]);
    } else if (k % 10 === 0) {
      sample('app', 100, 0, us, work);
    }
  }
  return out.join('');
}

mkdirSync(workdir, { recursive: true });
writeFileSync(path.join(workdir, 'burst.perf-script'), burstPerfScript());

// inprof runs in the work directory, so the commands the page prints name the file as
// `burst.perf-script` and run there as they are.
function run(args) {
  const r = spawnSync(inprof, args, { cwd: workdir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    console.error(`inprof ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    process.exit(1);
  }
  return r;
}
run(['timeline', 'burst.perf-script', '-o', 'timeline.html']);
run(['timeline', '--per-thread', 'burst.perf-script', '-o', 'threads.html']);
run(['timeline', '--from', '1', '--to', '2.5', 'burst.perf-script', '-o', 'part.html']);

// Runs the command a page printed (inprof flame ... -o flame.svg) and returns the SVG.
function runPrinted(command, out) {
  const words = command.split(' ');
  if (words[0] !== 'inprof' || words.at(-2) !== '-o') {
    check(false, `printed command has the expected shape: ${command}`);
    return '';
  }
  words[words.length - 1] = out;
  run(words.slice(1));
  return readFileSync(path.join(workdir, out), 'utf8');
}

// ---- The browser ------------------------------------------------------------------------------

const browser = await launchBrowser();

async function open(file) {
  const url = pathToFileURL(path.join(workdir, file)).href;
  const page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  const { errors, foreign } = watchPage(page, (u) => u === url || u.startsWith('blob:'));
  await page.goto(url);
  await page.waitForFunction(() => typeof tl !== 'undefined');
  return { page, errors, foreign };
}

// The centre of a heat map cell in the viewport, scrolled into it first (mouse events go to
// what is on screen).
async function cellCentre(page, map, col, row) {
  const cell = page.locator(`svg.map[data-map="${map}"] rect[data-c="${col}"][data-r="${row}"]`);
  await cell.scrollIntoViewIfNeeded();
  const box = await cell.boundingBox();
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}
async function clickCell(page, map, col, row) {
  const c = await cellCentre(page, map, col, row);
  await page.mouse.click(c.x, c.y);
}

// The range graph in its frame: waits for the frame's script to have read the boxes.
async function flameFrame(page) {
  await page.waitForFunction(() => document.getElementById('flame').src.startsWith('blob:'));
  const src = await page.evaluate(() => document.getElementById('flame').src);
  let frame = null;
  for (let i = 0; i < 50 && !frame; i++) {
    frame = page.frames().find((f) => f.url() === src) || null;
    if (!frame) await page.waitForTimeout(50);
  }
  if (!frame) return null;
  await frame.waitForFunction(() => typeof fg !== 'undefined' && fg.frames.length > 0);
  return frame;
}

// The share of the graph's samples in boxes named `name` (boxes of one name never nest here).
function shareOf(frame, name) {
  return frame.evaluate((name) => {
    let w = 0;
    for (const f of fg.frames) if (nameOf(f) === name) w += f.w;
    return w / fg.root.w;
  }, name);
}

try {
  // ---- The heat map ----------------------------------------------------------------------
  {
    const { page, errors, foreign } = await open('timeline.html');
    expectEqual(await page.locator('svg.map').count(), 1, 'one map for all threads');
    const cells = await page.evaluate(() =>
      Array.from(document.querySelectorAll('svg.map rect[data-c]')).map((r) => ({
        c: Number(r.dataset.c), r: Number(r.dataset.r), w: Number(r.dataset.w),
        x: Number(r.getAttribute('x')), fill: r.getAttribute('fill'),
      })),
    );
    expectEqual(cells.length, 150, 'a cell for every 20 ms of the 3 s');
    const hottest = Math.max(...cells.map((c) => c.w));
    const hot = cells.filter((c) => c.w === hottest);
    expectEqual(hot.length, 15, 'the burst fills 15 cells of 20 ms');
    check(hot.every((c) => c.c === 1 && c.r >= 15 && c.r < 30), 'they are second 1, from 300 ms to 600 ms');
    expectEqual(hottest, 40 * PERIOD, 'each holds 40 samples');
    // Drawn in the column labelled 1, in the scale's hottest colour; colder cells in others.
    const label = await page.evaluate(() =>
      Array.from(document.querySelectorAll('svg.map text.cl')).map((t) => [t.textContent, Number(t.getAttribute('x'))]),
    );
    const column1 = label.find(([text]) => text === '1');
    check(column1 && hot.every((c) => c.x === column1[1]), 'the hot cells are drawn in the column labelled 1');
    const legendHot = await page.evaluate(() => {
      const rects = document.querySelectorAll('svg.legend rect');
      return rects[rects.length - 1].getAttribute('fill');
    });
    check(hot.every((c) => c.fill === legendHot), `hot cells have the legend's hottest colour ${legendHot}`);
    check(cells.filter((c) => c.w < hottest).every((c) => c.fill !== legendHot), 'no other cell has it');
    expectEqual(await page.locator('#selection').isHidden(), true, 'no graph before a selection');

    // ---- Two clicks select the burst ----------------------------------------------------
    await clickCell(page, 0, 1, 15);
    const status = await page.locator('#status').textContent();
    check(status.includes('1.3 s') && status.includes('end cell'), `first click marks the start: ${status}`);
    await clickCell(page, 0, 1, 29);
    const range = await page.locator('#range').textContent();
    check(range.startsWith('Selected 1.3 s to 1.6 s (0.3 s): 600 samples'), `range shown: ${range}`);
    const command = await page.locator('#command').textContent();
    expectEqual(command, 'inprof flame --from 1.3 --to 1.6 burst.perf-script -o flame.svg', 'the equivalent command');
    const frame = await flameFrame(page);
    check(frame !== null, 'the range graph loads in its frame');
    if (frame) {
      const burst = await shareOf(frame, 'burst');
      check(burst >= 0.9, `burst holds ${(100 * burst).toFixed(1)}% of the range's graph (>= 90%)`);
      expectEqual(await frame.evaluate(() => fg.root.w), 600 * PERIOD, 'the graph holds the range\'s weight');
      // The graph works as any flame graph: search gives the matched share, a click zooms.
      const matched = await frame.evaluate(() => { search('^burst$'); return fg.matched.textContent; });
      expectEqual(matched, 'Matched: 98.0%', 'search in the range graph');
      const zoomed = await frame.evaluate(() => {
        const f = fg.frames.find((f) => nameOf(f) === 'helper_main');
        f.g.dispatchEvent(new MouseEvent('click', { bubbles: true }));
        return fg.zoomed === f && !fg.unzoom.classList.contains('hide');
      });
      check(zoomed, 'a click zooms in the range graph');
    }
    const pageSvg = await page.evaluate(() => tl.svg);
    const printed = runPrinted(command, 'printed-burst.svg');
    check(pageSvg === printed, 'the page\'s graph is byte for byte what the printed command writes');
    const save = await page.locator('#save').getAttribute('download');
    expectEqual(save, 'flame-1.3-1.6.svg', 'the save link names the range');

    // ---- A drag selects another range ---------------------------------------------------
    const from = await cellCentre(page, 0, 1, 20);
    const to = await cellCentre(page, 0, 1, 25);
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(to.x, to.y, { steps: 6 });
    await page.mouse.up();
    const dragged = await page.locator('#range').textContent();
    check(dragged.startsWith('Selected 1.4 s to 1.52 s (0.12 s): 240 samples'), `drag selects 1.4-1.52 s: ${dragged}`);
    const dragCommand = await page.locator('#command').textContent();
    expectEqual(dragCommand, 'inprof flame --from 1.4 --to 1.52 burst.perf-script -o flame.svg', 'its command');
    check((await page.evaluate(() => tl.svg)) === runPrinted(dragCommand, 'printed-drag.svg'),
          'the dragged range\'s graph is what its command writes');
    const outlined = await page.locator('svg.map .sel rect').count();
    expectEqual(outlined, 1, 'the selection is outlined');

    // A selection across columns: from 0.98 s to 2.02 s.
    await clickCell(page, 0, 0, 49);
    await clickCell(page, 0, 2, 0);
    const across = await page.locator('#range').textContent();
    check(across.startsWith('Selected 0.98 s to 2.02 s'), `a range over three columns: ${across}`);
    expectEqual(await page.locator('svg.map .sel rect').count(), 3, 'outlined in each column');
    check((await page.evaluate(() => tl.svg)) === runPrinted(await page.locator('#command').textContent(), 'printed-across.svg'),
          'its graph is what its command writes');

    await page.keyboard.press('Escape');
    expectEqual(await page.locator('#selection').isHidden(), true, 'Escape clears the selection');
    expectEqual(await page.locator('svg.map .sel rect').count(), 0, 'and its outline');
    expectEqual(errors.length, 0, `no script errors ${errors.join('; ')}`);
    expectEqual(foreign.length, 0, `nothing loaded from elsewhere ${foreign.join(' ')}`);
  }

  // ---- One map per thread -------------------------------------------------------------------
  {
    const { page, errors, foreign } = await open('threads.html');
    const names = await page.evaluate(() => Array.from(document.querySelectorAll('h2')).map((h) => h.textContent));
    expectEqual(names.join(', '), 'app (100), helper (101)', 'a map per thread, busiest first');
    await clickCell(page, 1, 1, 15);
    await clickCell(page, 1, 1, 29);
    const command = await page.locator('#command').textContent();
    expectEqual(command, 'inprof flame --from 1.3 --to 1.6 --thread 101 burst.perf-script -o flame.svg',
                'the command selects the map\'s thread');
    const frame = command ? await flameFrame(page) : null;
    if (frame) {
      expectEqual(await shareOf(frame, 'burst'), 1, 'the helper\'s range is all burst');
      const inlined = await frame.evaluate(() => {
        const f = fg.frames.find((f) => nameOf(f) === 'step');
        return f ? titleOf(f) : null;
      });
      check(inlined !== null && inlined.includes('inlined'), `an inlined frame says so: ${inlined}`);
    }
    check((await page.evaluate(() => tl.svg)) === runPrinted(command, 'printed-thread.svg'),
          'the thread\'s graph is what its command writes');
    // A click in the other map starts a new selection there.
    await clickCell(page, 0, 0, 0);
    await clickCell(page, 0, 2, 49);
    const all = await page.locator('#command').textContent();
    expectEqual(all, 'inprof flame --from 0 --to 3 --thread 100 burst.perf-script -o flame.svg', 'the other map\'s whole range');
    expectEqual(errors.length, 0, `no script errors ${errors.join('; ')}`);
    expectEqual(foreign.length, 0, `nothing loaded from elsewhere ${foreign.join(' ')}`);
  }
  // ---- Part of the profile: columns from --from's second on ------------------------------
  {
    const { page, errors } = await open('part.html');
    const labels = await page.evaluate(() =>
      Array.from(document.querySelectorAll('svg.map text.cl')).map((t) => t.textContent).join(' '));
    expectEqual(labels, '1 2', 'a map of 1-2.5 s starts at second 1');
    await clickCell(page, 0, 1, 15);
    await clickCell(page, 0, 1, 29);
    const command = await page.locator('#command').textContent();
    expectEqual(command, 'inprof flame --from 1.3 --to 1.6 burst.perf-script -o flame.svg', 'the same range there');
    check((await page.evaluate(() => tl.svg)) === runPrinted(command, 'printed-part.svg'),
          'with the same graph');
    expectEqual(errors.length, 0, `no script errors ${errors.join('; ')}`);
  }
} finally {
  await browser.close();
}

finish();
