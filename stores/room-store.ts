// UI-only state of the web room (selection, panels, filters, drafts, connection banner) — server data lives in TanStack Query.
import { createStore } from 'zustand/vanilla';
import { MAX_SESSION_KEY, SESSION_KEY_RE } from '@/server/sessions/keys';

export type ToolboxMode = 'hidden' | 'collapsed' | 'expanded';
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'error';
/** The right-hand drawer: the agent board, the agent picker (delegates) or the event inspector. */
export type SidePanel = 'none' | 'board' | 'agents' | 'events';
/** Narrow windows, where the side panel and the sidebar cover the room (Tailwind's md breakpoint). */
export const OVERLAY_MEDIA = '(max-width: 767.98px)';
const overlaid = () => typeof window !== 'undefined' && !!window.matchMedia?.(OVERLAY_MEDIA).matches;

/**
 * A key the room can open (CONTRACT §4's grammar): not a deleted session's archive key (`<key>#deleted-<ms>`, which a
 * board item or a link once named: the pane asked for it and showed the server's validation JSON).
 */
export const openableKey = (key: string) => key.length <= MAX_SESSION_KEY && SESSION_KEY_RE.test(key);

/** The sidebar's kind filters (CONTRACT §4 kinds as people say them: a subagent is a delegate). */
export type SidebarKind = 'main' | 'delegate' | 'channel';

export interface InspectorState {
  /** While paused the list holds still; events keep being collected. */
  paused: boolean;
  /** The newest event id shown when the list was paused. */
  pausedAt: number;
  /** Streams to show; empty = all. */
  streams: string[];
  text: string;
}

export interface RoomState {
  selectedSessionKey: string;
  /** The default agent's main session: what `/` opens. */
  defaultSessionKey: string;
  toolbox: ToolboxMode;
  panel: SidePanel;
  /** The sessions sidebar as an overlay on narrow windows. */
  sidebarOpen: boolean;
  kindFilter: SidebarKind[];
  sessionSearch: string;
  /** messageCount last seen per session: more than that (and not open) is unread. */
  seen: Record<string, number>;
  inspector: InspectorState;
  /** Unsent composer text per session, so switching sessions keeps what was typed. */
  drafts: Record<string, string>;
  connection: ConnectionState;
  connectionError: string | null;
  /** A search result to show: the transcript pages back to that row and scrolls it into view. */
  focus: { sessionKey: string; messageId: number } | null;
  /** The approvals inbox dialog. */
  approvalsOpen: boolean;
  /** A key asked for that the room cannot open (a deleted session's, a bad `?session=`): said once, in words. */
  unopenable: string | null;
}

export interface RoomActions {
  selectSession(sessionKey: string): void;
  setToolbox(mode: ToolboxMode): void;
  togglePanel(panel: Exclude<SidePanel, 'none'>): void;
  closePanel(): void;
  setSidebarOpen(open: boolean): void;
  toggleKind(kind: SidebarKind): void;
  setSessionSearch(text: string): void;
  /** Records message counts as seen: the open session always, others only the first time they are listed. */
  noteCounts(counts: Record<string, number>, openKey: string): void;
  setInspector(patch: Partial<InspectorState>): void;
  setDraft(sessionKey: string, text: string): void;
  setConnection(state: ConnectionState, error?: string | null): void;
  /** Opens a session at a message (a search result). */
  openAt(sessionKey: string, messageId: number): void;
  clearFocus(): void;
  setApprovalsOpen(open: boolean): void;
  /** Says (or, with null, stops saying) that a key cannot be opened. */
  setUnopenable(key: string | null): void;
}

export type RoomStore = RoomState & RoomActions;

export type RoomInit = Pick<RoomState, 'selectedSessionKey'> & Partial<Pick<RoomState, 'toolbox' | 'defaultSessionKey'>>;

/** What opening `key` changes: the selection (or, for a key no request can name, a sentence instead) and the overlays. */
function opening(key: string): Partial<RoomState> {
  const covered: Partial<RoomState> = overlaid() ? { sidebarOpen: false, panel: 'none' } : { sidebarOpen: false };
  return openableKey(key) ? { ...covered, selectedSessionKey: key, unopenable: null } : { ...covered, unopenable: key };
}

export function createRoomStore(init: RoomInit) {
  return createStore<RoomStore>()((set) => ({
    selectedSessionKey: init.selectedSessionKey,
    defaultSessionKey: init.defaultSessionKey ?? init.selectedSessionKey,
    toolbox: init.toolbox ?? 'collapsed',
    panel: 'none',
    sidebarOpen: false,
    kindFilter: [],
    sessionSearch: '',
    seen: {},
    inspector: { paused: false, pausedAt: 0, streams: [], text: '' },
    drafts: {},
    connection: 'connecting',
    connectionError: null,
    focus: null,
    approvalsOpen: false,
    unopenable: null,
    // Opening a session closes what covers it on a narrow window: the sidebar, and a side panel (the board) there.
    selectSession: (sessionKey) => set(opening(sessionKey.toLowerCase())),
    setToolbox: (toolbox) => set({ toolbox }),
    togglePanel: (panel) => set((s) => ({ panel: s.panel === panel ? 'none' : panel })),
    closePanel: () => set({ panel: 'none' }),
    setSidebarOpen: (sidebarOpen) => set({ sidebarOpen }),
    toggleKind: (kind) =>
      set((s) => ({ kindFilter: s.kindFilter.includes(kind) ? s.kindFilter.filter((k) => k !== kind) : [...s.kindFilter, kind] })),
    setSessionSearch: (sessionSearch) => set({ sessionSearch }),
    noteCounts: (counts, openKey) =>
      set((s) => {
        let seen = s.seen;
        for (const [key, n] of Object.entries(counts)) {
          if (seen[key] === n || (key !== openKey && key in seen)) continue;
          if (seen === s.seen) seen = { ...s.seen };
          seen[key] = n;
        }
        return seen === s.seen ? s : { seen };
      }),
    setInspector: (patch) => set((s) => ({ inspector: { ...s.inspector, ...patch } })),
    setDraft: (sessionKey, text) => set((s) => ({ drafts: { ...s.drafts, [sessionKey]: text } })),
    setConnection: (connection, error = null) => set({ connection, connectionError: error }),
    openAt: (sessionKey, messageId) => {
      const key = sessionKey.toLowerCase();
      set(openableKey(key) ? { ...opening(key), focus: { sessionKey: key, messageId } } : opening(key));
    },
    clearFocus: () => set({ focus: null }),
    setApprovalsOpen: (approvalsOpen) => set({ approvalsOpen }),
    setUnopenable: (unopenable) => set({ unopenable }),
  }));
}
