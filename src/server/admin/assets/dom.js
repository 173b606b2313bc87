// Building the page from data. Every value from the daemon is written with textContent (through
// `el`), never parsed as HTML, so a row holding markup shows the markup as text.

/** An element with attributes and children; strings become text nodes. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else if (name === 'class') node.className = value;
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

/** How a database value reads in a table cell: text as itself, NULL, blobs and special reals tagged. */
export function valueText(value) {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'object') {
    if ('$blob' in value) return `blob (base64) ${value.$blob}`;
    if ('$real' in value) return String(value.$real);
    return JSON.stringify(value);
  }
  return String(value);
}

/** A table of `columns` and `rows` (arrays of values), every cell as text. */
export function table(columns, rows, attributes = {}) {
  return el('table', attributes,
    el('thead', {}, el('tr', {}, columns.map((name) => el('th', { text: name })))),
    el('tbody', {}, rows.map((row) => el('tr', {}, row.map((value) =>
      value instanceof Node ? el('td', {}, value) : el('td', { text: valueText(value) }))))));
}

/** A two-column table of name/value pairs, without a header row. */
export function pairs(rows, attributes = {}) {
  return el('table', { class: 'pairs', ...attributes },
    el('tbody', {}, rows.map(([name, value]) => el('tr', {}, el('th', { text: name }),
      value instanceof Node ? el('td', {}, value) : el('td', { text: valueText(value) })))));
}

/** A status line: `kind` is `info`, `ok` or `error`. */
export function message(kind, text, attributes = {}) {
  return el('p', { class: `message ${kind}`, role: kind === 'error' ? 'alert' : 'status', ...attributes, text });
}

/** A labelled form field. */
export function field(label, input) {
  return el('label', { class: 'field' }, el('span', { text: label }), input);
}

/** Pretty JSON as text. */
export function jsonBlock(value, attributes = {}) {
  return el('pre', { class: 'json', ...attributes, text: JSON.stringify(value, null, 2) });
}

/**
 * Asks for confirmation in a modal dialog that lists what will change. Resolves true only when
 * the operator presses the confirm button.
 */
export function confirmAction({ title, lines, confirmLabel }) {
  return new Promise((resolve) => {
    const dialog = el('dialog', { id: 'confirm-dialog', class: 'confirm' });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    replace(dialog,
      el('h3', { text: title }),
      el('ul', { id: 'confirm-changes' }, lines.map((line) => el('li', { text: line }))),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', id: 'confirm-cancel', onclick: () => done(false), text: 'Cancel' }),
        el('button', { type: 'button', id: 'confirm-ok', class: 'danger', onclick: () => done(true), text: confirmLabel })));
    dialog.addEventListener('cancel', () => done(false));
    document.body.append(dialog);
    dialog.showModal();
  });
}
