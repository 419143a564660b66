// Renders public/icons/icon.svg into the PNG icons the web app manifest lists (192 and
// 512 pixels), with Debian's Chromium. The PNGs are committed; run this after changing
// the SVG: `node web/scripts/make-icons.mjs`.

import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const icons = new URL("../../public/icons/", import.meta.url);
const svg = readFileSync(new URL("icon.svg", icons), "utf8");
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  for (const size of [192, 512]) {
    const page = await browser.newPage({ viewport: { width: size, height: size } });
    await page.setContent(`<style>html,body{margin:0}svg{display:block;width:${size}px;height:${size}px}</style>${svg}`);
    await page.screenshot({ path: new URL(`icon-${size}.png`, icons).pathname, omitBackground: false });
    await page.close();
  }
} finally {
  await browser.close();
}
