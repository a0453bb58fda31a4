// serve_page.mjs: a real browser through the page `tfm serve` serves.
// Opens URL in Debian's chromium (headless, through playwright-core; it
// never downloads a browser), types SENTENCE into the text box, clicks
// Translate, waits for the translation and prints {"translation", "time",
// "console_errors"} as JSON: the errors are every error the page's console
// showed (a resource that failed to load, such as a 404 favicon, is one) and
// every uncaught exception. Saves a screenshot of the page on a desktop and on a phone, side
// by side, to SHOT (PNG).
//   node serve_page.mjs URL SENTENCE SHOT PROFILE_DIR
import { chromium } from 'playwright-core';

const [url, sentence, shot, profile] = process.argv.slice(2);
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1000, height: 440 },
  timeout: 60000,
});
try {
  const page = await context.newPage();
  page.setDefaultTimeout(60000);
  const consoleErrors = [];
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', e => consoleErrors.push('uncaught: ' + e.message));
  await page.goto(url);
  await page.waitForLoadState('networkidle');   // the favicon's request too
  await page.fill('#src', sentence);
  await page.click('#go');
  await page.waitForFunction(() => /ms$/.test(document.getElementById('time').textContent) ||
                                   document.getElementById('error').textContent !== '');
  const error = await page.textContent('#error');
  if (error) throw new Error('the page says: ' + error);
  const translation = await page.textContent('#out');
  const time = await page.textContent('#time');
  const desktop = await page.screenshot();
  await page.setViewportSize({ width: 390, height: 700 });
  const phone = await page.screenshot();
  // the two side by side, in one picture
  const side = await context.newPage();
  await side.setViewportSize({ width: 1000 + 390 + 48, height: 700 + 32 });
  const img = b => 'data:image/png;base64,' + b.toString('base64');
  await side.setContent(`<body style="margin:0;padding:16px;background:#e4e7ec;display:flex;
    gap:16px;align-items:flex-start"><img style="box-shadow:0 2px 8px #0003"
    src="${img(desktop)}"><img style="box-shadow:0 2px 8px #0003" src="${img(phone)}"></body>`);
  await side.waitForLoadState('load');
  await side.screenshot({ path: shot });
  console.log(JSON.stringify({ translation, time, console_errors: consoleErrors }));
} finally {
  await context.close();
}
