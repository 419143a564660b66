// The offline app: registers the service worker (web/src/sw.ts) and tells the user what
// it does. After the first visit "Ready to work offline" shows for a moment in the footer
// and goes by itself; when a new deployment has been downloaded in the background, a bar
// above the footer says so and offers to reload into it. Nothing changes under a running
// page until the user accepts, and neither notice covers any of the page.

/// <reference types="vite-plugin-pwa/vanillajs" />
import { registerSW } from "virtual:pwa-register";
import "./pwa.css";

declare const __TOPOS_BUILD__: string;

/** The build this page runs (TOPOS_BUILD_ID at build time); the tests read it too. */
export const BUILD_ID = __TOPOS_BUILD__;

// A page left open for days still learns of a new deployment.
const UPDATE_CHECK_MS = 60 * 60 * 1000;
const OFFLINE_NOTE_MS = 6000;

/** A notice in the page's flow, above the footer (in the footer with `inFooter`), never over the page. */
function notice(id: string, text: string, inFooter = false): HTMLElement {
  document.getElementById(id)?.remove();
  const footer = document.querySelector("body > footer");
  const bar = document.createElement(inFooter ? "span" : "div");
  bar.id = id;
  bar.className = inFooter ? "pwa-note" : "pwa-notice";
  bar.setAttribute("role", "status");
  const message = document.createElement("span");
  message.textContent = text;
  bar.append(message);
  if (inFooter && footer) footer.append(bar);
  else document.body.insertBefore(bar, footer);
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
      const bar = notice("pwa-offline", "Ready to work offline: this page now starts without a network.", true);
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
