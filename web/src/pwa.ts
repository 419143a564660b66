// The offline app: registers the service worker (web/src/sw.ts) and tells the user what
// it does. After the first visit "Ready to work offline" shows for a moment; when a new
// deployment has been downloaded in the background, a bar says so and offers to reload
// into it. Nothing changes under a running page until the user accepts.

/// <reference types="vite-plugin-pwa/vanillajs" />
import { registerSW } from "virtual:pwa-register";
import "./pwa.css";

declare const __TOPOS_BUILD__: string;

/** The build this page runs (TOPOS_BUILD_ID at build time); the tests read it too. */
export const BUILD_ID = __TOPOS_BUILD__;

// A page left open for days still learns of a new deployment.
const UPDATE_CHECK_MS = 60 * 60 * 1000;
const OFFLINE_NOTE_MS = 4000;

function notice(id: string, text: string): HTMLDivElement {
  document.getElementById(id)?.remove();
  const bar = document.createElement("div");
  bar.id = id;
  bar.className = "pwa-notice";
  bar.setAttribute("role", "status");
  const message = document.createElement("span");
  message.textContent = text;
  bar.append(message);
  document.body.append(bar);
  return bar;
}

function button(label: string, action: () => void): HTMLButtonElement {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = label;
  element.addEventListener("click", action);
  return element;
}

let started = false;

/**
 * Register the service worker. The page calls this once Python has started, so that the
 * worker's downloads (mostly answered by the HTTP cache) never compete with the first start.
 */
export function startOfflineApp(): void {
  if (started || !("serviceWorker" in navigator)) return;
  started = true;
  const update = registerSW({
    immediate: true,
    onOfflineReady() {
      document.body.dataset.offline = "ready";
      const bar = notice("pwa-offline", "Ready to work offline: this page now starts without a network.");
      setTimeout(() => bar.remove(), OFFLINE_NOTE_MS);
    },
    onNeedRefresh() {
      document.body.dataset.update = "available";
      const bar = notice("pwa-update", "A new version of the playground is available.");
      bar.setAttribute("role", "alert");
      // The new worker takes over, then the page reloads into the new deployment (your code is autosaved).
      const reload = button("Reload to update", () => {
        reload.disabled = true;
        document.body.dataset.update = "applying";
        void update(true);
      });
      bar.append(reload, button("Later", () => bar.remove()));
    },
    onRegisteredSW(_url, registration) {
      if (registration) setInterval(() => void registration.update().catch(() => {}), UPDATE_CHECK_MS);
    },
    onRegisterError(error) {
      console.warn("the offline app could not start:", error);
    },
  });
}

document.documentElement.dataset.build = BUILD_ID;
