// What every browser test shares: checks that print "ok"/"FAIL" lines and are counted,
// Debian's Chromium started headless, and a page watched for script errors and for requests
// that leave the page's own origin (our files must load nothing from elsewhere).
import { chromium } from 'playwright-core';

let failures = 0;

export function check(condition, what) {
  if (condition) {
    console.log(`ok   ${what}`);
  } else {
    console.log(`FAIL ${what}`);
    failures++;
  }
}

export function expectEqual(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: got ${a}${a === e ? '' : `, expected ${e}`}`);
}

// Chromium from CHROMIUM (default /usr/bin/chromium), headless; without its sandbox as root,
// which it refuses to start there (containers, CI).
export async function launchBrowser() {
  const args = ['--disable-gpu', '--disable-dev-shm-usage'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args,
  });
}

// Collects `page`'s script errors and the URLs of requests `isOwn` does not accept.
export function watchPage(page, isOwn) {
  const errors = [];
  const foreign = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('request', (r) => !isOwn(r.url()) && foreign.push(r.url()));
  return { errors, foreign };
}

// The test's verdict: exit 1 when a check failed.
export function finish() {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log('all checks passed');
}
