// The service worker: Workbox precaches every file of the site (the list, with each
// file's revision, is injected by vite-plugin-pwa at build time) and answers from that
// cache, so that after one visit the playground starts with no network.
//
// A new deployment means a new worker with a new list. It installs beside the running one,
// fetching only what changed, and then waits: the page (web/src/pwa.ts) shows "update
// available", and only when the user accepts does it take over, all at once. Until then the
// old worker keeps serving the old files, so a tab never mixes two deployments.

import { addPlugins, cleanupOutdatedCaches, precacheAndRoute, type PrecacheEntry } from "workbox-precaching";

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Array<PrecacheEntry | string> };

/**
 * Workbox fetches a changed file with `cache: "reload"`, which skips the HTTP cache. On the
 * first visit the page has just downloaded Pyodide and the wheels itself, so that would
 * download them twice. `no-cache` asks the server instead: a file the HTTP cache holds and
 * the server confirms unchanged (304) is not sent again, and a changed one is.
 */
addPlugins([
  {
    requestWillFetch: async ({ request, event }) =>
      event?.type === "install" && request.cache === "reload" ? new Request(request, { cache: "no-cache" }) : request,
  },
]);

// A query never changes a file of this static site (`/?timeLimit=...`, the wheel's
// `?sha256=...` when it is not part of the precached URL): match without it.
precacheAndRoute(self.__WB_MANIFEST, { ignoreURLParametersMatching: [/.*/] });
cleanupOutdatedCaches();

// Sent by workbox-window's messageSkipWaiting() when the user accepts the update.
self.addEventListener("message", (event) => {
  if ((event.data as { type?: string } | null)?.type === "SKIP_WAITING") void self.skipWaiting();
});
