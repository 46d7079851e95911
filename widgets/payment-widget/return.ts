/// <reference lib="dom" />
/**
 * The page the card issuer's 3-D Secure challenge returns to (`GET /hosted/payment-widget/3ds-return`), inside the
 * widget's challenge frame: it tells the widget, on this origin only, that the cardholder is back.
 */
const app = document.getElementById('app') ?? document.body
const text = document.createElement('p')
text.id = 'returning'
text.className = 'w-status'
text.setAttribute('role', 'status')
text.textContent = 'Returning to the payment…'
app.replaceChildren(text)
document.body.dataset.state = 'returning'

if (window.parent !== window) window.parent.postMessage({ type: 'tessera:3ds-return' }, location.origin)
