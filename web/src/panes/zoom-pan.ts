// Zoom and pan of a drawing through its SVG viewBox: the wheel zooms at the pointer, a drag
// pans (a mouse, a pen or one finger), two fingers pinch and pan together, and the keyboard
// zooms (+, -), fits (0) and pans (the arrow keys) while the view has focus. The view is kept
// as the drawing's point at the host's top-left corner and the scale (screen pixels per
// drawing unit), so that a resize keeps what is at the top-left and the scale.

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface ZoomPanOptions {
  /** The wheel zooms only with Ctrl or Cmd (a card in a scrolling list: the plain wheel scrolls the list). */
  wheelNeedsModifier: boolean;
}

/** Labels are 12 px: below this scale they are too small to read (9 px), and a view that must show one zooms in. */
export const READABLE_SCALE = 0.75;
const MIN_SCALE = 0.02;
/** A gesture has rested when no wheel or pointer move came for this long: the view is then drawn sharp. */
const GESTURE_REST_MS = 120;
/** Below this scale labels are 5 px or less: the drawing leaves them out. */
const FAR_SCALE = 0.42;
const MAX_SCALE = 4;
/**
 * The opening view zooms out no further than this to show a graph's groups whole (their names are drawn
 * 9.5 px tall on screen at any scale, graph-view.css): the Gaussian process's row of calls side by side
 * needs less than 0.3. A graph of hundreds of groups opens on its top.
 */
const MIN_OPEN_SCALE = 0.2;
/** A fit never enlarges a small graph beyond its natural size. */
const MAX_FIT_SCALE = 1;
const MARGIN = 12;
/** A pointer that moves less than this (screen pixels) before it is let go clicked; beyond it, it drags. */
const DRAG_THRESHOLD = 4;
const KEY_PAN = 60;
const KEY_ZOOM = 1.25;

type Point = { x: number; y: number };

export class ZoomPan {
  /** The drawing's point at the host's top-left corner, and screen pixels per drawing unit. */
  private view = { x: 0, y: 0, scale: 1 };
  private content = { width: 0, height: 0 };
  private svg: SVGSVGElement | null = null;
  /** The animation frame that will write the view (0: none is due). */
  private frame = 0;
  /** Whether the view is moving under a wheel, a drag or a pinch (see write()). */
  private gesture = false;
  private rest: ReturnType<typeof setTimeout> | undefined;
  /** The view written into the drawing's viewBox last. */
  private committed: { svg: SVGSVGElement; x: number; y: number; scale: number } | null = null;
  private readonly pointers = new Map<number, Point>();
  private dragged = false;
  private dragStart: Point | null = null;
  /** What to do once the host has a size (a hidden tab has none): the opening view, or a node to bring into view. */
  private pending: (() => void) | null = null;
  /** Whether the user zoomed or panned since the opening view. */
  touched = false;
  /** Whether the view shows the whole drawing by a fit, untouched since: a resize fits again. */
  private fitted = false;
  private readonly resizes: ResizeObserver;

  constructor(
    readonly host: HTMLElement,
    keyTarget: HTMLElement,
    private readonly options: ZoomPanOptions,
  ) {
    host.addEventListener("wheel", (event) => this.wheel(event), { passive: false });
    host.addEventListener("pointerdown", (event) => this.pointerDown(event));
    host.addEventListener("pointermove", (event) => this.pointerMove(event));
    for (const type of ["pointerup", "pointercancel"] as const) host.addEventListener(type, (event) => this.pointerUp(event));
    // A drag ends in a click on whatever it started on: that click is not a selection.
    host.addEventListener("click", (event) => {
      if (!this.dragged) return;
      this.dragged = false;
      event.stopPropagation();
    }, true);
    keyTarget.addEventListener("keydown", (event) => this.key(event));
    this.resizes = new ResizeObserver(() => {
      if (!this.hasSize()) return;
      const pending = this.pending;
      this.pending = null;
      if (pending) pending();
      // A fitted view is fitted again, which is no move of the user's: the next recording still opens afresh.
      else if (this.fitted) this.fitWhole();
      else this.apply();
    });
    this.resizes.observe(host);
  }

  /** The view was taken off the page for good (a graph card replaced): it watches and schedules nothing more. */
  dispose(): void {
    this.resizes.disconnect();
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    clearTimeout(this.rest);
    this.pending = null;
  }

  /** A new drawing of `width` x `height` (drawing units) in `svg`; the view stays where it was unless `open`. */
  setDrawing(svg: SVGSVGElement, width: number, height: number): void {
    this.svg = svg;
    this.content = { width, height };
    this.apply();
  }

  /** The current view: the drawing's rectangle in sight, and the scale. */
  visible(): Rect & { scale: number } {
    const { width, height } = this.size();
    return { x: this.view.x, y: this.view.y, width: width / this.view.scale, height: height / this.view.scale, scale: this.view.scale };
  }

  /**
   * The opening view: the whole drawing when it is readable so (fitted). Else `coarser` may draw the
   * graph with less detail (its groups collapsed) and open that instead, when it returns true; else the
   * main groups (`opening.groups`), fitted whole down to MIN_OPEN_SCALE (their names are drawn at a
   * readable size however small the boxes, graph-view.css), or at that scale on the topmost
   * (`opening.first`) when they do not fit so; with no groups, a readable scale with the sources (at the top)
   * centred across and their top at the top of the view.
   */
  open(opening: { groups: Rect | null; first: Rect | null; sources: Rect }, coarser?: () => boolean): void {
    this.whenSized(() => {
      if (this.fitScale() >= READABLE_SCALE) this.fitWhole();
      else if (coarser?.()) return;
      else if (opening.groups) this.fitRect(opening.groups, MIN_OPEN_SCALE, opening.first ?? opening.groups);
      else {
        const focus = opening.sources;
        const { width } = this.size();
        // As much of the top row as a readable scale shows.
        this.view.scale = Math.max(READABLE_SCALE, Math.min(1, (width - 2 * MARGIN) / Math.max(focus.width, 1)));
        this.view.x = focus.x + focus.width / 2 - width / this.view.scale / 2;
        this.view.y = focus.y - MARGIN;
        this.apply();
      }
      this.touched = false;
    });
  }

  /**
   * Show `rect` whole and centred, at the largest scale up to the natural size that does; but at no
   * scale below `floor`, where the view shows `rect`'s top, centred across on `top` (a box in it).
   */
  private fitRect(rect: Rect, floor = 0, top: Rect = rect): void {
    const { width, height } = this.size();
    const fitting = Math.min(MAX_FIT_SCALE, (width - 2 * MARGIN) / Math.max(rect.width, 1), (height - 2 * MARGIN) / Math.max(rect.height, 1));
    const scale = Math.max(floor, fitting);
    const centre = fitting < floor ? { x: top.x + top.width / 2, y: rect.y - MARGIN / scale + height / scale / 2 } : { x: rect.x + rect.width / 2, y: rect.y + rect.height / 2 };
    this.view = { scale, x: centre.x - width / scale / 2, y: centre.y - height / scale / 2 };
    this.apply();
  }

  fit(): void {
    this.touched = true;
    this.whenSized(() => this.fitWhole());
  }

  /** The whole drawing in view; a resize fits it again, until the view moves. */
  private fitWhole(): void {
    this.fitRect({ x: 0, y: 0, width: this.content.width, height: this.content.height });
    this.fitted = true;
  }

  /** Bring `rect` into view: pan to it when it is not wholly in sight, and zoom in to a readable scale when the view is smaller. */
  reveal(rect: Rect): void {
    this.whenSized(() => {
      const seen = this.visible();
      const inside = rect.x >= seen.x && rect.y >= seen.y && rect.x + rect.width <= seen.x + seen.width && rect.y + rect.height <= seen.y + seen.height;
      if (inside && seen.scale >= READABLE_SCALE) return;
      if (seen.scale < READABLE_SCALE) this.view.scale = 1;
      // Centred; a rectangle larger than the view (an opened group's frame) shows its top left corner.
      const { width, height } = this.size();
      const across = width / this.view.scale;
      const down = height / this.view.scale;
      this.view.x = rect.width <= across ? rect.x + rect.width / 2 - across / 2 : rect.x - MARGIN;
      this.view.y = rect.height <= down ? rect.y + rect.height / 2 - down / 2 : rect.y - MARGIN;
      this.apply();
    });
  }

  /** Zoom by `factor` keeping the drawing's point under (screenX, screenY) of the host in place (the centre by default). */
  zoomBy(factor: number, at?: Point): void {
    this.touched = true;
    const { width, height } = this.size();
    const { x: px, y: py } = at ?? { x: width / 2, y: height / 2 };
    const scale = Math.min(MAX_SCALE, Math.max(Math.min(MIN_SCALE, this.fitScale()), this.view.scale * factor));
    const drawingX = this.view.x + px / this.view.scale;
    const drawingY = this.view.y + py / this.view.scale;
    this.view = { scale, x: drawingX - px / scale, y: drawingY - py / scale };
    this.apply();
  }

  /** Move the drawing by (dx, dy) screen pixels. */
  panBy(dx: number, dy: number): void {
    this.touched = true;
    this.view.x -= dx / this.view.scale;
    this.view.y -= dy / this.view.scale;
    this.apply();
  }

  private size(): { width: number; height: number } {
    return { width: this.host.clientWidth, height: this.host.clientHeight };
  }

  private hasSize(): boolean {
    return this.host.clientWidth > 0 && this.host.clientHeight > 0;
  }

  private whenSized(action: () => void): void {
    if (this.hasSize()) {
      this.pending = null;
      action();
    } else {
      this.pending = action;
    }
  }

  private fitScale(): number {
    const { width, height } = this.size();
    if (!this.content.width || !this.content.height) return 1;
    return Math.min(MAX_FIT_SCALE, (width - 2 * MARGIN) / this.content.width, (height - 2 * MARGIN) / this.content.height);
  }

  private apply(): void {
    this.fitted = false; // fit() sets it again after this
    // The drawing is written once a frame, however many wheel or pointer events came in it.
    if (!this.frame) this.frame = requestAnimationFrame(() => this.write());
  }

  /**
   * Show the view. While a gesture goes on (wheel, drag, pinch), the drawing as last laid out is
   * moved and scaled by a CSS transform, which the compositor applies without laying out or
   * painting a thousand boxes again; once the gesture rests, the view is written into the viewBox.
   */
  private write(): void {
    this.frame = 0;
    if (!this.svg) return;
    const { width, height } = this.size();
    const { x, y, scale } = this.view;
    const view = `${x.toFixed(2)} ${y.toFixed(2)} ${(width / scale).toFixed(2)} ${(height / scale).toFixed(2)}`;
    // The view and its scale, for the tests; far out, the labels are not drawn (too small to read, and costly to paint).
    this.host.dataset.view = view;
    this.host.dataset.scale = scale.toFixed(3);
    clearTimeout(this.rest);
    const committed = this.committed;
    if (this.gesture && committed && this.svg === committed.svg) {
      const k = scale / committed.scale;
      this.svg.style.transform = `translate(${(committed.x - x) * scale}px, ${(committed.y - y) * scale}px) scale(${k})`;
      this.rest = setTimeout(() => {
        this.gesture = false;
        this.write();
      }, GESTURE_REST_MS);
      return;
    }
    this.svg.style.transform = "";
    this.svg.setAttribute("viewBox", view);
    this.committed = { svg: this.svg, x, y, scale };
    this.host.classList.toggle("far", scale < FAR_SCALE);
    // Zoomed out below a readable scale, the groups' names are drawn larger by as much (graph-view.css).
    this.host.style.setProperty("--graph-scale", scale.toFixed(3));
    this.host.classList.toggle("overview", scale < READABLE_SCALE);
  }

  private local(event: { clientX: number; clientY: number }): Point {
    const box = this.host.getBoundingClientRect();
    return { x: event.clientX - box.left, y: event.clientY - box.top };
  }

  private wheel(event: WheelEvent): void {
    const modified = event.ctrlKey || event.metaKey;
    if (this.options.wheelNeedsModifier && !modified) return;
    event.preventDefault();
    this.gesture = true;
    const lines = event.deltaMode === WheelEvent.DOM_DELTA_LINE ? 16 : event.deltaMode === WheelEvent.DOM_DELTA_PAGE ? this.size().height : 1;
    // A trackpad's pinch arrives as a wheel with Ctrl and small steps: it needs a larger factor per pixel.
    this.zoomBy(Math.exp(-event.deltaY * lines * (event.ctrlKey ? 0.01 : 0.0015)), this.local(event));
  }

  private pointerDown(event: PointerEvent): void {
    if ((event.target as Element).closest("button")) return; // the view's own controls
    if (event.pointerType === "mouse" && event.button !== 0) return;
    this.pointers.set(event.pointerId, this.local(event));
    this.dragged = false;
    this.dragStart = this.pointers.size === 1 ? this.local(event) : null;
  }

  private pointerMove(event: PointerEvent): void {
    const last = this.pointers.get(event.pointerId);
    if (!last) return;
    const now = this.local(event);
    this.gesture = true;
    if (this.pointers.size >= 2) {
      // Two fingers: the change of their distance zooms at their midpoint, the midpoint's move pans.
      const [a, b] = [...this.pointers.values()];
      const other = a === last ? b : a;
      const before = Math.hypot(last.x - other.x, last.y - other.y);
      const after = Math.hypot(now.x - other.x, now.y - other.y);
      const midpoint = { x: (now.x + other.x) / 2, y: (now.y + other.y) / 2 };
      if (before > 0) this.zoomBy(after / before, midpoint);
      this.panBy((now.x - last.x) / 2, (now.y - last.y) / 2);
      this.dragged = true;
    } else {
      const start = this.dragStart ?? last;
      if (!this.dragged && Math.hypot(now.x - start.x, now.y - start.y) < DRAG_THRESHOLD) return;
      if (!this.dragged) {
        this.dragged = true;
        // Captured only once it drags: a pointer captured at once would turn a click on a node into a click on the view.
        this.host.setPointerCapture(event.pointerId);
        this.host.classList.add("panning");
      }
      this.panBy(now.x - last.x, now.y - last.y);
    }
    this.pointers.set(event.pointerId, now);
  }

  private pointerUp(event: PointerEvent): void {
    this.pointers.delete(event.pointerId);
    if (!this.pointers.size) this.host.classList.remove("panning");
    if (this.host.hasPointerCapture(event.pointerId)) this.host.releasePointerCapture(event.pointerId);
  }

  private key(event: KeyboardEvent): void {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if ((event.target as Element).closest?.("button")) return;
    const moves: Record<string, () => void> = {
      "+": () => this.zoomBy(KEY_ZOOM),
      "=": () => this.zoomBy(KEY_ZOOM),
      "-": () => this.zoomBy(1 / KEY_ZOOM),
      _: () => this.zoomBy(1 / KEY_ZOOM),
      "0": () => this.fit(),
      ArrowLeft: () => this.panBy(KEY_PAN, 0),
      ArrowRight: () => this.panBy(-KEY_PAN, 0),
      ArrowUp: () => this.panBy(0, KEY_PAN),
      ArrowDown: () => this.panBy(0, -KEY_PAN),
    };
    const move = moves[event.key];
    if (!move) return;
    event.preventDefault();
    move();
  }
}
