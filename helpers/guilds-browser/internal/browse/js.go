package browse

import "strings"

// evalPrefix wraps the model's async function body; bodyFirstLine is the line of the evaluated
// source its first line lands on (used to report a throw's line in the body's own numbering).
const evalPrefix = "async () => {\nlet value;\ntry {\nvalue = await (async () => {\n"

var bodyFirstLine = strings.Count(evalPrefix, "\n") + 1

// evalSuffix catches a throw and checks the value is JSON-serializable before it leaves the page.
const evalSuffix = `
})();
} catch (e) {
  return { threw: true, name: String((e && e.name) || 'Error'), message: String(e && e.message !== undefined ? e.message : e), stack: String((e && e.stack) || '') };
}
if (value === undefined) return { undef: true };
const seen = new Set();
const check = (v, path) => {
  if (v === null) return '';
  switch (typeof v) {
    case 'string': case 'boolean': case 'undefined': return '';
    case 'number': return Number.isFinite(v) ? '' : path + ' is ' + v + ', which JSON cannot carry';
    case 'bigint': return path + ' is a BigInt (' + v + 'n); return it as a string or a number';
    case 'function': return path + ' is a function';
    case 'symbol': return path + ' is a symbol';
  }
  if (typeof v.toJSON === 'function') return '';
  if (seen.has(v)) return path + ' refers back to an object that contains it (a cycle)';
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) {
    const kind = (v.constructor && v.constructor.name) || Object.prototype.toString.call(v).slice(8, -1);
    return path + ' is a ' + kind + ', not plain data';
  }
  seen.add(v);
  const keys = Array.isArray(v) ? v.keys() : Object.keys(v);
  for (const k of keys) {
    const r = check(v[k], Array.isArray(v) ? path + '[' + k + ']' : path + '.' + k);
    if (r) return r;
  }
  seen.delete(v);
  return '';
};
const bad = check(value, 'the value');
if (bad) return { unserializable: bad };
return { json: JSON.stringify(value) };
}`

// scrollJS scrolls one viewport: the panel given as the element (or its nearest scrollable
// ancestor), else the visible overflow panel that can still move that way, else the window.
const scrollJS = `(el, dir) => {
  const vertical = dir === 'up' || dir === 'down';
  const sign = dir === 'down' || dir === 'right' ? 1 : -1;
  const describe = (e) => {
    let s = e.tagName.toLowerCase();
    if (e.id) s += '#' + e.id;
    else if (e.classList && e.classList.length) s += '.' + [...e.classList].slice(0, 2).join('.');
    const label = e.getAttribute('aria-label');
    if (label) s += ' "' + label + '"';
    return s;
  };
  const scrollable = (e) => {
    if (!(e instanceof Element) || e === document.documentElement || e === document.body) return false;
    const st = getComputedStyle(e);
    const ov = vertical ? st.overflowY : st.overflowX;
    if (!/(auto|scroll|overlay)/.test(ov)) return false;
    return vertical ? e.scrollHeight > e.clientHeight + 1 : e.scrollWidth > e.clientWidth + 1;
  };
  const pos = (e) => vertical ? e.scrollTop : e.scrollLeft;
  const span = (e) => vertical ? e.scrollHeight - e.clientHeight : e.scrollWidth - e.clientWidth;
  const canMove = (e) => sign > 0 ? pos(e) < span(e) - 1 : pos(e) > 0;
  const visibleArea = (e) => {
    const r = e.getBoundingClientRect();
    const st = getComputedStyle(e);
    if (st.visibility === 'hidden' || st.display === 'none') return 0;
    const w = Math.min(r.right, innerWidth) - Math.max(r.left, 0);
    const h = Math.min(r.bottom, innerHeight) - Math.max(r.top, 0);
    return w > 0 && h > 0 ? w * h : 0;
  };
  let panel = null;
  if (el) {
    for (let e = el; e; e = e.parentElement) if (scrollable(e)) { panel = e; break; }
    if (!panel) return { error: 'the target ' + describe(el) + ' is not inside a panel that scrolls ' + (vertical ? 'up and down' : 'left and right') };
  } else {
    let best = 0;
    for (const e of document.querySelectorAll('*')) {
      if (!scrollable(e) || !canMove(e)) continue;
      const a = visibleArea(e);
      if (a > best) { best = a; panel = e; }
    }
  }
  if (panel) {
    const before = pos(panel);
    const step = vertical ? panel.clientHeight : panel.clientWidth;
    panel.scrollBy({ [vertical ? 'top' : 'left']: sign * step, behavior: 'instant' });
    return { what: 'the panel ' + describe(panel), before, after: pos(panel), max: span(panel), step };
  }
  const se = document.scrollingElement || document.documentElement;
  const before = vertical ? scrollY : scrollX;
  const step = vertical ? innerHeight : innerWidth;
  scrollBy({ [vertical ? 'top' : 'left']: sign * step, behavior: 'instant' });
  const max = vertical ? se.scrollHeight - innerHeight : se.scrollWidth - innerWidth;
  return { what: 'the window', before, after: vertical ? scrollY : scrollX, max: Math.max(0, max), step };
}`

// caretToEndJS puts the caret after what a field holds, so typed keys append.
const caretToEndJS = `(el) => {
  if (typeof el.setSelectionRange === 'function' && typeof el.value === 'string') {
    try { const n = el.value.length; el.setSelectionRange(n, n); return; } catch (e) {}
  }
  if (el.isContentEditable) {
    const r = document.createRange(); r.selectNodeContents(el); r.collapse(false);
    const s = getSelection(); s.removeAllRanges(); s.addRange(r);
  }
}`

// docTokenJS names the current document, so refs from another document are refused.
const docTokenJS = `() => (window.__guildsDocToken ??= Math.random().toString(36).slice(2) + Date.now().toString(36))`

// openProbeJS counts window.open calls in the page (hooking it once per document) and says
// whether clicking el follows a link or submits a form into another tab.
const openProbeJS = `(el) => {
  if (!window.__guildsOpenHooked) {
    window.__guildsOpenHooked = true;
    window.__guildsOpens = 0;
    const open = window.open;
    window.open = function (...args) { window.__guildsOpens++; return open.apply(this, args); };
  }
  const other = (t) => !!t && !['_self', '_parent', '_top'].includes(t.toLowerCase());
  const link = el.closest('a[href], area[href]');
  const form = el.form || el.closest('form');
  return { opens: window.__guildsOpens, target: !!((link && other(link.target)) || (!link && form && other(form.target))) };
}`

// opensJS reads the window.open count after a click (-1 in a new document).
const opensJS = `() => window.__guildsOpens ?? -1`
