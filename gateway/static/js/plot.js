// Line plots of time series on a canvas: a few series, a shared time window, a y axis from zero.

function cssVar(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

// Sizes the canvas's backing store to its CSS box on this screen; returns the 2D context in CSS pixels.
function context(canvas) {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, canvas.clientWidth);
  const height = Math.max(1, canvas.clientHeight);
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  return { ctx, width, height };
}

const label = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2).replace(/\.?0+$/, ""));

// series: [{points: [[t, v], ...], color}]; window: {start, end} in seconds; minTop: the smallest y-axis top.
export function drawPlot(canvas, series, window, minTop = 1) {
  const { ctx, width, height } = context(canvas);
  const pad = { left: 4, right: 4, top: 12, bottom: 4 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  let top = minTop;
  for (const s of series) for (const [, v] of s.points) top = Math.max(top, v * 1.15);
  const x = (t) => pad.left + ((t - window.start) / (window.end - window.start)) * plotW;
  const y = (v) => pad.top + plotH - (v / top) * plotH;

  ctx.clearRect(0, 0, width, height);
  ctx.strokeStyle = cssVar("--grid", "#333");
  ctx.lineWidth = 1;
  for (let i = 0; i <= 2; i++) {
    const gy = Math.round(pad.top + (plotH * i) / 2) + 0.5;
    ctx.beginPath();
    ctx.moveTo(pad.left, gy);
    ctx.lineTo(width - pad.right, gy);
    ctx.stroke();
  }
  ctx.fillStyle = cssVar("--muted", "#888");
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillText(label(top), pad.left + 2, 10);

  for (const s of series) {
    const points = s.points.filter(([t]) => t >= window.start - 5);
    if (!points.length) continue;
    const color = cssVar(s.color, "#4af");
    ctx.beginPath();
    points.forEach(([t, v], i) => (i ? ctx.lineTo(x(t), y(v)) : ctx.moveTo(x(t), y(v))));
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx.lineTo(x(points[points.length - 1][0]), y(0));
    ctx.lineTo(x(points[0][0]), y(0));
    ctx.closePath();
    ctx.globalAlpha = 0.15;
    ctx.fillStyle = color;
    ctx.fill();
    ctx.globalAlpha = 1;
  }
}
