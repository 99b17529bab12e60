// Drives the MCP Inspector's own web UI (@modelcontextprotocol/inspector, pinned by
// scripts/install-peers.sh) in a headless Chromium through playwright-core (pinned beside it), as a
// person would: connect to the server the Inspector was started on, list the tools, run
// `book_trip`, and answer the forms the Inspector draws — once to the end (form, payment page
// approved, confirmation), once declining the trip form, once cancelling it, once cancelling the
// URL step in the Inspector's dialog, once denying the payment on its page.
//
// Usage: node inspector_ui.mjs PLAN
//   PLAN is JSON: {"url": the Inspector's address with its token, "era": "legacy" | "modern"
//                  (the Inspector's --protocol-era), "trip": {...} (the answers typed in),
//                  "chromium": path, "failures": folder for the screenshot of a failed step,
//                  "screenshots": folder for the docs' screenshots, or null}
// The browser reaches 127.0.0.1 only: every other request (the UI asks for web fonts) is aborted,
// and its resolver maps every other name to nothing.
// Every event is one JSON line on stdout, for the test to check:
//   {"event":"connected","protocol":"MCP 2025-11-25"}   the version the server card shows
//   {"event":"tools","names":[...]}                     the tool list drawn
//   {"event":"form","message":...,"labels":[...]}       a form was drawn (its fields' labels)
//   {"event":"url","url":...,"mrtr":bool}               a URL step was drawn; mrtr: shown as a retry
//   {"event":"page","page":...,"heading":...}         the payment page, opened from the URL dialog,
//                                                      answered (approve or deny): where it landed
//   {"event":"result","action":...,"text":...}         the Results panel after an ending
//   {"event":"failed","step":...,"error":...,"screenshot":path}   then exit code 1
// Every wait is bounded (STEP); playwright's own timeouts apply to each action.
import { createRequire } from 'node:module';
import path from 'node:path';

const STEP = 30_000;
const plan = JSON.parse(process.argv[2]);
const require = createRequire(path.resolve(process.env.INSPECTOR_MODULES ?? '.', 'x.js'));
const { chromium } = require('playwright-core');

const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');

const browser = await chromium.launch({
  executablePath: plan.chromium,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-dev-shm-usage', '--no-proxy-server',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  ],
});
// Tall enough that the Inspector's dialog shows the whole trip form (its scroll area is a share
// of the window's height): the docs' screenshot holds every field.
const context = await browser.newContext({ viewport: { width: 1280, height: 1900 } });
context.setDefaultTimeout(STEP);
await context.route((url) => url.hostname !== '127.0.0.1', (route) => route.abort());
const page = await context.newPage();

let step = 'start';
async function shot(name, target = page) {
  if (plan.screenshots) await target.screenshot({ path: path.join(plan.screenshots, name) });
}

// The text the Results panel shows, once it shows one (the tool's text content, in a code block).
async function resultText() {
  const heading = page.getByRole('heading', { name: 'Results', exact: true });
  const content = heading.locator('xpath=../../..').locator('pre').first();
  await content.waitFor();
  return content.innerText();
}

// The labels of the dialog's fields (not its "Edit as JSON" switch), without the required mark.
async function fieldLabels(dialog) {
  const labels = await dialog.locator('label').allInnerTexts();
  return labels.map((l) => l.replace(/\s*\*$/, '').trim()).filter((l) => l !== 'Edit as JSON');
}

// Opens book_trip afresh (closing an earlier result) and runs it: the trip form's dialog.
async function runBookTrip() {
  const close = page.getByRole('button', { name: 'Close results' });
  if (await close.count()) await close.click();
  await page.getByText('book_trip', { exact: true }).first().click();
  await page.getByRole('button', { name: 'Execute Tool' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('Where would you like to fly?').waitFor();
  emit({ event: 'form', message: 'Where would you like to fly?', labels: await fieldLabels(dialog) });
  return dialog;
}

// Picks `option` in the select (single or multiple) labelled `label`; a multi-select's pills
// field sits under its box, which takes the click.
async function choose(dialog, label, option) {
  await dialog.getByRole('textbox', { name: label, exact: true }).click({ force: true });
  await page.getByRole('option', { name: option, exact: true }).click();
  await page.keyboard.press('Escape');
}

async function fillTrip(dialog, trip) {
  const text = (label) => dialog.getByRole('textbox', { name: label, exact: true });
  await text('From').fill(trip.from);
  await text('To').fill(trip.to);
  await text('Departure date').fill(trip.depart);
  await text('Travellers').fill(String(trip.travellers));
  await text('E-mail').fill(trip.email);
  await choose(dialog, 'Cabin', trip.cabin);
  await choose(dialog, 'Seat', trip.seat);
  for (const meal of trip.meals) await choose(dialog, 'Meals', meal);
  for (const extra of trip.extras) await choose(dialog, 'Extras', extra);
}

// Fills the trip form and submits it; waits for the payment step's URL dialog and reports it.
async function submitTrip(dialog, screenshot) {
  await fillTrip(dialog, plan.trip);
  if (screenshot) await shot(`inspector-form-${plan.era}.png`, dialog);
  await dialog.getByRole('button', { name: 'Submit' }).click();
  const url = dialog.getByText(/^http:\/\/127\.0\.0\.1:\d+\/pay\//);
  await url.waitFor();
  // The Inspector marks a step of a Multi Round-Trip call (the server's input_required result).
  const mrtr = (await dialog.getByText(/returned input_required/).count()) > 0;
  emit({ event: 'url', url: await url.innerText(), mrtr });
}

// Opens the payment page from the URL dialog, as the person would, and presses `button` there
// (`approve` or `deny`); then the URL step is done.
async function onPaymentPage(dialog, button) {
  const popup = context.waitForEvent('page');
  await dialog.getByRole('button', { name: 'Open in Browser' }).click();
  const payment = await popup;
  await payment.locator(`#${button}`).click();
  const answered = payment.getByRole('heading', { name: /^Payment (approved|denied)$/ });
  await answered.waitFor();
  emit({ event: 'page', page: payment.url(), heading: await answered.innerText() });
  await payment.close();
  // Without a session the Inspector hears of no completion: the person says they are done, and
  // the call is retried with the URL step accepted. With one, the server's
  // notifications/elicitation/complete moves the dialog on by itself.
  if (plan.era === 'modern') await dialog.getByRole('button', { name: "I've completed it" }).click();
}

try {
  step = 'connect';
  await page.goto(plan.url);
  await page.locator('.mantine-Switch-track').first().click();
  const version = page.getByText(/^MCP \d{4}-\d{2}-\d{2}$/);
  await version.waitFor();
  emit({ event: 'connected', protocol: await version.innerText() });

  step = 'list tools';
  await page.getByText('Tools', { exact: true }).first().click();
  await page.getByText('book_trip', { exact: true }).first().waitFor();
  const names = await page.getByText(/^(book_trip|rate_trip|plan_trip|group_booking)$/).allInnerTexts();
  emit({ event: 'tools', names });

  // Accept: the trip form, the payment page, the confirmation.
  step = 'accept: trip form';
  let dialog = await runBookTrip();
  await submitTrip(dialog, true);

  step = 'accept: payment step';
  await shot(`inspector-url-${plan.era}.png`, dialog);
  await onPaymentPage(dialog, 'approve');

  step = 'accept: confirmation';
  await dialog.getByText('Tick to book the trip').waitFor();
  const question = await dialog.getByText(/^“Book .*”$/).innerText();
  emit({ event: 'form', message: question.slice(1, -1), labels: await fieldLabels(dialog) });
  await dialog.getByRole('checkbox', { name: 'Book it' }).or(dialog.getByRole('switch', { name: 'Book it' })).check({ force: true });
  await dialog.getByRole('button', { name: 'Submit' }).click();
  emit({ event: 'result', action: 'accept', text: await resultText() });

  // Declined, then cancelled, at the trip form.
  for (const action of ['Decline', 'Cancel']) {
    step = `${action.toLowerCase()}: trip form`;
    dialog = await runBookTrip();
    await dialog.getByRole('button', { name: action, exact: true }).click();
    emit({ event: 'result', action: action.toLowerCase(), text: await resultText() });
  }

  // Cancelled at the URL step, in the Inspector's URL dialog.
  step = 'cancel at the URL step';
  dialog = await runBookTrip();
  await submitTrip(dialog, false);
  await dialog.getByRole('button', { name: 'Cancel', exact: true }).click();
  emit({ event: 'result', action: 'cancel-url', text: await resultText() });

  // Denied on the payment page.
  step = 'deny on the payment page';
  dialog = await runBookTrip();
  await submitTrip(dialog, false);
  await onPaymentPage(dialog, 'deny');
  emit({ event: 'result', action: 'deny-page', text: await resultText() });
  await browser.close();
} catch (error) {
  const screenshot = path.join(plan.failures, `inspector-failed-${plan.era}.png`);
  await page.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
  emit({ event: 'failed', step, error: String(error.message ?? error).replace(/\x1b\[\d+m/g, ''), screenshot });
  await browser.close().catch(() => {});
  process.exit(1);
}
