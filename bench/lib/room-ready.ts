// In-page timing of "the room is interactive" for bench:room: a page init script that notes, in the page's own clock
// (0 = navigation start), when the composer is on screen, the live stream connected and the session list on screen,
// then the next animation frame after all three (the frame that paints the last of them). A MutationObserver sees each
// change as it happens; Playwright's own waits poll at up to 500 ms intervals, which blurred the figure by as much.
// A string: tsx would wrap named inner functions in a helper the page does not have.
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
