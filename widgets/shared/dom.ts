/** DOM helpers: the pages' CSP forbids inline styles and the widgets never parse HTML, so everything is built here. */

export type Child = Node | string | null | undefined | false

/** Creates an element; attribute values are set as text (never `style`), children as nodes or text. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    element.setAttribute(name, value === true ? '' : value)
  }
  append(element, ...children)
  return element
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child)
  }
}

export function clear(element: Element): void {
  element.replaceChildren()
}
