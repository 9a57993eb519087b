'use client';
// The browser side of Web Push (CONTRACT §7 "Notifications"): registers the service worker, subscribes with the
// server's VAPID key (§3 push.vapidKey / push.subscribe), unsubscribes, and keeps the app badge on the pending count.
import { useTRPCClient } from '@/lib/trpc/client';
import { useCallback, useEffect, useState } from 'react';

export type PushState = 'unsupported' | 'off' | 'on' | 'working' | 'denied' | 'error';

const SW_URL = '/sw.js';

const supported = () => typeof window !== 'undefined' && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

/** The VAPID key as pushManager.subscribe takes it (bytes of the base64url text). */
function keyBytes(b64url: string): Uint8Array<ArrayBuffer> {
  const raw = atob(b64url.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (b64url.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function subscriptionParams(sub: PushSubscription) {
  const j = sub.toJSON();
  return { subscription: { endpoint: sub.endpoint, keys: { p256dh: j.keys?.p256dh ?? '', auth: j.keys?.auth ?? '' } } };
}

export function usePush(): { state: PushState; detail: string; toggle: () => void } {
  const client = useTRPCClient();
  const [state, setState] = useState<PushState>('off');
  const [detail, setDetail] = useState('');

  // The worker is registered on every visit (it shows what is pushed, and makes the room installable); an existing
  // subscription is sent again, so a server that lost it (a fresh data dir) has it back.
  useEffect(() => {
    if (!supported()) {
      setState('unsupported');
      return;
    }
    let live = true;
    void (async () => {
      try {
        const reg = await navigator.serviceWorker.register(SW_URL, { scope: '/' });
        if (Notification.permission !== 'granted') {
          // Never granted: no subscription to look for (and the Push API is not touched until the button is used).
          if (live && Notification.permission === 'denied') setState('denied');
          return;
        }
        const sub = await reg.pushManager.getSubscription();
        if (!live) return;
        if (sub) {
          setState('on');
          await client.push.subscribe.mutate(subscriptionParams(sub)).catch(() => undefined);
        }
      } catch (e) {
        if (live) {
          setState('error');
          setDetail(e instanceof Error ? e.message : String(e));
        }
      }
    })();
    return () => {
      live = false;
    };
  }, [client]);

  const toggle = useCallback(() => {
    if (!supported()) return;
    setState('working');
    void (async () => {
      try {
        const reg = await navigator.serviceWorker.register(SW_URL, { scope: '/' });
        const existing = await reg.pushManager.getSubscription();
        if (existing) {
          await client.push.unsubscribe.mutate({ endpoint: existing.endpoint });
          await existing.unsubscribe();
          setState('off');
          setDetail('');
          return;
        }
        const permission = await Notification.requestPermission();
        if (permission !== 'granted') {
          setState(permission === 'denied' ? 'denied' : 'off');
          return;
        }
        const { publicKey } = await client.push.vapidKey.query();
        const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
        await client.push.subscribe.mutate(subscriptionParams(sub));
        setState('on');
        setDetail('');
      } catch (e) {
        // No push service reachable (some browsers, a headless one), or the server refused the endpoint: shown, not thrown.
        setState('error');
        setDetail(e instanceof Error ? e.message : String(e));
      }
    })();
  }, [client]);

  return { state, detail, toggle };
}

/** The app badge (installed app's icon) shows the pending count where the browser supports it. */
export function useAppBadge(count: number | undefined): void {
  useEffect(() => {
    if (count === undefined || typeof navigator === 'undefined') return;
    const nav = navigator as Navigator & { setAppBadge?: (n?: number) => Promise<void>; clearAppBadge?: () => Promise<void> };
    if (!nav.setAppBadge || !nav.clearAppBadge) return;
    void (count > 0 ? nav.setAppBadge(count) : nav.clearAppBadge()).catch(() => undefined);
  }, [count]);
}
