// UI-only state of the web room (selection, panels, drafts, connection banner) — server data lives in TanStack Query.
import { createStore } from 'zustand/vanilla';

export type ToolboxMode = 'hidden' | 'collapsed' | 'expanded';
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'error';

export interface RoomState {
  selectedSessionKey: string;
  /** The default agent's main session: what `/` opens. */
  defaultSessionKey: string;
  toolbox: ToolboxMode;
  /** Unsent composer text per session, so switching sessions keeps what was typed. */
  drafts: Record<string, string>;
  connection: ConnectionState;
  connectionError: string | null;
}

export interface RoomActions {
  selectSession(sessionKey: string): void;
  setToolbox(mode: ToolboxMode): void;
  setDraft(sessionKey: string, text: string): void;
  setConnection(state: ConnectionState, error?: string | null): void;
}

export type RoomStore = RoomState & RoomActions;

export type RoomInit = Pick<RoomState, 'selectedSessionKey'> & Partial<Pick<RoomState, 'toolbox' | 'defaultSessionKey'>>;

export function createRoomStore(init: RoomInit) {
  return createStore<RoomStore>()((set) => ({
    selectedSessionKey: init.selectedSessionKey,
    defaultSessionKey: init.defaultSessionKey ?? init.selectedSessionKey,
    toolbox: init.toolbox ?? 'collapsed',
    drafts: {},
    connection: 'connecting',
    connectionError: null,
    selectSession: (sessionKey) => set({ selectedSessionKey: sessionKey.toLowerCase() }),
    setToolbox: (toolbox) => set({ toolbox }),
    setDraft: (sessionKey, text) => set((s) => ({ drafts: { ...s.drafts, [sessionKey]: text } })),
    setConnection: (connection, error = null) => set({ connection, connectionError: error }),
  }));
}
