// In-page timing for bench:room and bench/profile-room.ts, as strings run in the page (tsx would wrap named inner
// functions in a helper the page does not have).
// "The room is interactive": a page init script that notes, in the page's own clock (0 = navigation start), when the
// composer is on screen, the live stream connected and the session list on screen, then the next animation frame
// after all three (the frame that paints the last of them). A MutationObserver sees each change as it happens;
// Playwright's own waits poll at up to 500 ms intervals, which blurred the figure by as much.
export const ROOM_READY_SCRIPT = `(() => {
  const marks = (window.__roomReady = {});
  const shown = (el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const check = () => {
    if (marks.composer === undefined && shown(document.querySelector('textarea[aria-label="Message"]'))) marks.composer = performance.now();
    if (marks.live === undefined && document.querySelector('[data-testid="status-bar"][data-connection="connected"]')) marks.live = performance.now();
    if (marks.list === undefined && shown(document.querySelector('[data-testid="session-item"]'))) marks.list = performance.now();
    if (marks.composer !== undefined && marks.live !== undefined && marks.list !== undefined) {
      observer.disconnect();
      requestAnimationFrame(() => (marks.all = performance.now()));
    }
  };
  const observer = new MutationObserver(check);
  observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-connection', 'class', 'style', 'hidden'] });
})();`;

export interface RoomReadyMarks {
  composer: number;
  live: number;
  list: number;
  /** The frame after all three: the figure bench:room reports. */
  all: number;
}

export interface SwitchTimes {
  /** Click → the first frame the new session's pane was there. */
  pane: number;
  /** Click → the frame after that pane shows transcript rows: the figure bench:room reports. */
  rows: number;
}

/**
 * In-page timing of a session switch, for `page.evaluate` (no automation round trips): clicks session `key` in the
 * sidebar, then checks every frame until its pane shows transcript rows, and resolves SwitchTimes (both NaN when the
 * item is not there; rows NaN after 10 s without rows). `before` is in-page code run just before the click; `after`
 * in-page statements run in the frame after the rows, before that time is taken, whose returned object is merged into
 * the result. Both see `k` (the key) and `t0` (the click, in the page's clock).
 */
export function sessionSwitchScript(key: string, o: { before?: string; after?: string } = {}): string {
  return `new Promise((resolve) => {
    const k = ${JSON.stringify(key)};
    const item = document.querySelector('[data-testid="session-item"][data-session-key="' + k + '"]');
    if (!item) return resolve({ pane: NaN, rows: NaN });
    const t0 = performance.now();
    let pane = NaN;
    ${o.before ?? ''}
    item.click();
    const tick = () => {
      const p = document.querySelector('[data-testid="session-pane"][data-session-key="' + k + '"]');
      if (p && !Number.isFinite(pane)) pane = performance.now() - t0;
      const rows = Number(p?.querySelector('[data-testid="transcript"]')?.getAttribute('data-rows') ?? 0);
      if (p && rows > 0) requestAnimationFrame(() => resolve({ ...(() => { ${o.after ?? 'return {};'} })(), pane, rows: performance.now() - t0 }));
      else if (performance.now() - t0 > 10000) resolve({ pane, rows: NaN });
      else requestAnimationFrame(tick);
    };
    tick();
  })`;
}
