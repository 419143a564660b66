// Image and heatmap cards (py/topos/show/pictures.py) drawn on canvases: each picture's bytes, base64,
// one a pixel (or three, RGB), through the card's palette, onto a canvas of the picture's own size,
// made larger by CSS with pixelated scaling (a pixel stays a square). A heatmap's points go on a
// second canvas over it, so that the values' canvas holds the values alone: what a test reads
// back pixel by pixel. Captions and titles are text (textContent), never markup.

import type { CardPicture, HeatmapCard, ImageCard } from "../../protocol";
import "./image.css";

type Colour = [number, number, number];

/** The size a drawn image reaches at least on its larger side, as in svg_image.py; a pixel grows by at most MAX_ZOOM. */
const DRAWN_SIDE = 96;
const MAX_ZOOM = 32;
/** The widest a heatmap is drawn, and the radius of its points. */
const HEATMAP_WIDTH = 320;
const POINT_RADIUS = 3.5;

/** A byte through `palette`: the linear blend of the two colours around it, rounded as pictures.py's `colours` rounds. */
export function colourOf(level: number, palette: Colour[]): Colour {
  const where = (level * (palette.length - 1)) / 255;
  const below = Math.min(Math.floor(where), palette.length - 2);
  const part = where - below;
  const [a, b] = [palette[below], palette[below + 1]];
  return [0, 1, 2].map((c) => Math.floor(a[c] * (1 - part) + b[c] * part + 0.5)) as Colour;
}

function bytesOf(base64: string): Uint8Array {
  const text = atob(base64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** The picture on a canvas of its own size (one canvas pixel a picture pixel), shown `zoom` times larger. */
function pictureCanvas(picture: CardPicture, palette: Colour[] | null, cssWidth: number, cssHeight: number): HTMLCanvasElement {
  const canvas = document.createElement("canvas");
  canvas.width = picture.width;
  canvas.height = picture.height;
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${cssHeight}px`;
  const bytes = bytesOf(picture.pixels);
  const image = new ImageData(picture.width, picture.height);
  // A palette of 256 colours, made once: a picture of 256x256 pixels looks each up, no blending a pixel.
  const table = palette ? Array.from({ length: 256 }, (_, level) => colourOf(level, palette)) : null;
  for (let pixel = 0; pixel < picture.width * picture.height; pixel++) {
    const colour: Colour = table ? table[bytes[pixel]] : [bytes[3 * pixel], bytes[3 * pixel + 1], bytes[3 * pixel + 2]];
    image.data.set([...colour, 255], 4 * pixel);
  }
  canvas.getContext("2d")!.putImageData(image, 0, 0);
  return canvas;
}

function zoomOf(picture: CardPicture): number {
  return Math.max(1, Math.min(MAX_ZOOM, Math.floor(DRAWN_SIDE / Math.max(picture.width, picture.height))));
}

const number = (value: number) => String(Number(value.toPrecision(4)));
const interval = ([low, high]: [number, number]) => `[${number(low)}, ${number(high)}]`;

/** The scale in words, under the pictures: what the colours mean and any downsampling. */
function scaleLine(card: ImageCard | HeatmapCard): HTMLElement {
  const [low, high] = card.range;
  const words =
    card.scale === "diverging"
      ? `diverging: blue ${number(low)}, white ${number((low + high) / 2)}, red ${number(high)}`
      : card.scale === "rgb"
        ? `RGB, range ${interval(card.range)} a channel`
        : `gray: black ${number(low)}, white ${number(high)}`;
  const shrunk = card.downsampled > 1 ? `; downsampled ${card.downsampled}x by block mean` : "";
  return Object.assign(document.createElement("p"), { className: "picture-scale", textContent: words + shrunk });
}

function host(kind: string, title: string): HTMLElement {
  const figure = document.createElement("figure");
  figure.className = `card card-${kind}`;
  figure.dataset.title = title;
  if (title) figure.append(Object.assign(document.createElement("figcaption"), { className: "picture-title", textContent: title }));
  return figure;
}

export function drawImageCard(card: ImageCard): HTMLElement {
  const figure = host("image", card.title);
  const grid = document.createElement("div");
  grid.className = "picture-grid";
  for (const picture of card.images) {
    const zoom = zoomOf(picture);
    const cell = document.createElement("figure");
    cell.className = "picture";
    cell.append(pictureCanvas(picture, card.palette, picture.width * zoom, picture.height * zoom));
    if (picture.caption) cell.append(Object.assign(document.createElement("figcaption"), { textContent: picture.caption }));
    grid.append(cell);
  }
  figure.dataset.images = String(card.images.length);
  figure.append(grid, scaleLine(card));
  if (card.count > card.images.length) {
    figure.append(Object.assign(document.createElement("p"), { className: "picture-scale", textContent: `the first ${card.images.length} of ${card.count} shown` }));
  }
  return figure;
}

export function drawHeatmapCard(card: HeatmapCard, width: number): HTMLElement {
  const figure = host("heatmap", card.title);
  const cssWidth = Math.max(160, Math.min(HEATMAP_WIDTH, width));
  const cssHeight = Math.round((cssWidth * card.image.height) / card.image.width);
  const box = document.createElement("div");
  box.className = "heatmap-box";
  const values = pictureCanvas(card.image, card.palette, cssWidth, cssHeight);
  values.className = "heatmap-values";
  box.append(values);
  if (card.points) box.append(pointsCanvas(card, cssWidth, cssHeight));
  const axes = document.createElement("p");
  axes.className = "picture-scale";
  axes.textContent = `x ${interval(card.x_range)} left to right, y ${interval(card.y_range)} bottom to top`;
  figure.append(box, axes, scaleLine(card));
  return figure;
}

/** The points over the values, on a canvas of their own the size the values are shown at. */
function pointsCanvas(card: HeatmapCard, cssWidth: number, cssHeight: number): HTMLCanvasElement {
  const ratio = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.className = "heatmap-points";
  canvas.width = Math.round(cssWidth * ratio);
  canvas.height = Math.round(cssHeight * ratio);
  canvas.style.width = `${cssWidth}px`;
  canvas.style.height = `${cssHeight}px`;
  const context = canvas.getContext("2d")!;
  context.scale(ratio, ratio);
  const [[x0, x1], [y0, y1]] = [card.x_range, card.y_range];
  const points = card.points!;
  context.lineWidth = 1;
  context.strokeStyle = "white";
  for (let i = 0; i < points.x.length; i++) {
    const [r, g, b] = card.class_colours[points.class[i] % card.class_colours.length];
    context.fillStyle = `rgb(${r}, ${g}, ${b})`;
    context.beginPath();
    context.arc(((points.x[i] - x0) / (x1 - x0)) * cssWidth, ((y1 - points.y[i]) / (y1 - y0)) * cssHeight, POINT_RADIUS, 0, 2 * Math.PI);
    context.fill();
    context.stroke();
  }
  return canvas;
}
