// The LiveRoom watch page: enters the room over signaling as audience, plays an anchor over
// WHEP, shows the catalogue and the anchor's pop-up card, and buys. Everything the server
// sends is put on the page as text (textContent), never as HTML.
import { Signaling } from './signaling.js';
import { WHEPPlayer } from './whep.js';

const $ = (id) => document.getElementById(id);
const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? '';

const sdkAppId = Number(meta('liveroom-sdkappid'));
const development = meta('liveroom-development') === 'true';
const room = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const query = new URLSearchParams(location.search);
let userId = query.get('userId') ?? '';
let userSig = query.get('userSig') ?? '';
// For servers that require PrivateMapKeys (--require-private-map-key): the viewer's key for this room.
const privateMapKey = query.get('privateMapKey') ?? '';

const anchors = new Map();     // userId -> { video: boolean }
const products = new Map();    // itemNumber -> product
const pendingBuys = new Map(); // requestId -> itemNumber
let current = null;            // the anchor played
let chosen = null;             // the anchor the viewer picked, kept while it publishes
let popUp = null;              // { itemNumber, title, price }
let owners = new Set();        // who may change the shop (onShopOwners): whose SEI pop-ups count
let connection = 'connecting';
let playback = 'stopped';
let buyCount = 0;
let seiPopUps = 0;             // pop-ups that came as SEI on the video
const utf8 = new TextDecoder();
let signaling = null;

const player = new WHEPPlayer({
  room, get userId() { return userId; }, userSig: () => userSig, privateMapKey, video: $('video'),
  onState: (state) => { playback = state; showState(); },
  onSEI: (message) => {
    // An anchor's pop-up riding on the video (TRTC's item_popup_msg, as SEI): shown with its
    // frame, when the anchor played is one of the shop's owners (a co-host's SEI is not a card).
    if (!owners.has(current)) return;
    const next = parsePopUp(utf8.decode(message.data));
    if (!next || next.itemNumber === popUp?.itemNumber) return;
    popUp = next;
    seiPopUps++;
    renderPopUp();
  },
});

/** The state line: connecting, offline, waiting (nobody publishes), playing, or an error. */
function showState(error) {
  let state;
  let text;
  if (error) { state = 'error'; text = error; }
  else if (connection === 'connecting') { state = 'connecting'; text = 'connecting'; }
  else if (connection === 'offline') { state = 'offline'; text = 'offline, reconnecting'; }
  else if (connection === 'gave-up') { state = 'offline'; text = 'offline; reload the page'; }
  else if (connection === 'ended') { state = 'offline'; text = 'offline: you joined from another page'; }
  else if (current === null) { state = 'waiting'; text = 'waiting for the anchor'; }
  else if (playback === 'playing') { state = 'playing'; text = `live: ${current}`; }
  else { state = 'connecting'; text = `connecting to ${current}`; }
  const line = $('state');
  if (line.dataset.state === 'error' && !error) return;
  line.dataset.state = state;
  line.textContent = text;
}

// MARK: anchors and playback

function renderAnchors() {
  const list = $('anchors');
  const buttons = [...anchors.entries()].filter(([, anchor]) => anchor.video).map(([id]) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.userId = id;
    button.textContent = id;
    if (id === current) { button.classList.add('current'); button.setAttribute('aria-pressed', 'true'); }
    button.addEventListener('click', () => { chosen = id; choosePlayback(); });
    return button;
  });
  list.replaceChildren(...buttons);
}

/** Plays the chosen anchor while it publishes video, else the first one that does. */
function choosePlayback(force = false) {
  const publishing = [...anchors.entries()].filter(([, anchor]) => anchor.video).map(([id]) => id);
  const next = publishing.includes(chosen) ? chosen : (publishing.includes(current) ? current : publishing[0] ?? null);
  if (next !== current || force) {
    current = next;
    if (next === null) player.stop(); else player.play(next);
  }
  renderAnchors();
  showState();
}

// MARK: products, pop-up, buying

function money(price, currency) {
  return currency ? `${price} ${currency}` : String(price);
}

function renderProducts() {
  const items = [...products.values()].filter((p) => p.onShelf !== false).sort((a, b) => a.itemNumber - b.itemNumber).map((p) => {
    const item = document.createElement('li');
    item.dataset.item = String(p.itemNumber);
    const soldOut = p.stock <= 0;
    item.classList.toggle('sold-out', soldOut);
    const title = document.createElement('span');
    title.className = 'title';
    title.textContent = p.title;
    const price = document.createElement('span');
    price.className = 'price';
    price.textContent = money(p.price, p.currency);
    const stock = document.createElement('span');
    stock.className = 'stock';
    stock.textContent = soldOut ? 'sold out' : `${p.stock} left`;
    const buy = document.createElement('button');
    buy.type = 'button';
    buy.className = 'buy';
    buy.textContent = soldOut ? 'Sold out' : 'Buy';
    buy.disabled = soldOut;
    buy.addEventListener('click', () => buyProduct(p.itemNumber));
    item.append(title, price, stock, buy);
    return item;
  });
  $('products').replaceChildren(...items);
  renderPopUp();
}

function renderPopUp() {
  const card = $('popup');
  if (!popUp) { card.hidden = true; delete card.dataset.item; return; }
  const product = products.get(popUp.itemNumber);
  card.dataset.item = String(popUp.itemNumber);
  card.querySelector('.title').textContent = product?.title ?? popUp.title;
  card.querySelector('.price').textContent = product ? money(product.price, product.currency) : String(popUp.price);
  const soldOut = product ? product.stock <= 0 : false;
  card.classList.toggle('sold-out', soldOut);
  const buy = $('buy');
  buy.disabled = soldOut;
  buy.textContent = soldOut ? 'Sold out' : 'Buy';
  card.hidden = false;
}

/** The pop-up from TRTC's `item_popup_msg` JSON, or null when it is not one. */
function parsePopUp(data) {
  try {
    const message = JSON.parse(data);
    const item = message?.msg;
    if (message?.cmd !== 'item_popup_msg' || !Number.isInteger(item?.itemNumber)) return null;
    return { itemNumber: item.itemNumber, title: String(item.itemTitle ?? ''), price: String(item.itemPrice ?? '') };
  } catch { return null; }
}

function buyProduct(itemNumber) {
  const requestId = `${userId}-${Date.now().toString(36)}-${++buyCount}`.slice(-64);
  const result = $('buy-result');
  if (!signaling?.send({ type: 'buyProduct', itemNumber, quantity: 1, requestId })) {
    result.className = 'failed';
    result.textContent = 'not connected; try again in a moment';
    return;
  }
  pendingBuys.set(requestId, itemNumber);
  result.className = '';
  result.textContent = 'ordering…';
}

function showBuyResult(event) {
  if (event.requestId) pendingBuys.delete(event.requestId);
  const result = $('buy-result');
  if (event.code === 0) {
    result.className = 'ok';
    result.dataset.orderId = String(event.orderId);
    result.textContent = `Ordered: order ${event.orderId}`;
  } else {
    result.className = 'failed';
    delete result.dataset.orderId;
    result.textContent = `Not ordered: ${event.message ?? event.code}`;
  }
}

// MARK: signaling events

function handle(event) {
  switch (event.event) {
    case 'onEnterRoom':
      if (event.result > 0) {
        signaling.send({ type: 'listProducts' });
        // Anchors are announced again after each enter; a new session needs a new WHEP session.
        choosePlayback(true);
      } else {
        signaling.stop();
        showState(`cannot enter: ${event.errMsg ?? event.result}`);
      }
      break;
    case 'onExitRoom':
      // 1: this user entered from another page (or was removed): that page plays now.
      // 2: the room was dismissed or the server stops: enter again (with the backoff) and wait.
      if (event.reason === 1) { signaling.stop(); connection = 'ended'; current = null; player.stop(); showState(); }
      if (event.reason === 2) signaling.drop();
      break;
    case 'onRemoteUserEnterRoom':
      if (!anchors.has(event.userId)) anchors.set(event.userId, { video: false });
      renderAnchors();
      break;
    case 'onRemoteUserLeaveRoom':
      anchors.delete(event.userId);
      choosePlayback();
      break;
    case 'onUserVideoAvailable':
      anchors.set(event.userId, { video: event.available === true });
      choosePlayback();
      break;
    case 'onProductList': {
      // The catalogue comes a page at a time (100 products at most): ask for the next one
      // until every product of the total has come.
      const page = event.products ?? [];
      const offset = Number(event.offset ?? 0);
      if (offset === 0) products.clear();
      for (const p of page) products.set(p.itemNumber, p);
      if (page.length > 0 && offset + page.length < Number(event.total ?? 0)) {
        signaling.send({ type: 'listProducts', offset: offset + page.length });
      }
      renderProducts();
      break;
    }
    case 'onProductChanged':
      for (const p of event.products ?? []) products.set(p.itemNumber, p);
      for (const itemNumber of event.removed ?? []) products.delete(itemNumber);
      renderProducts();
      break;
    case 'onShopOwners':
      owners = new Set(event.owners ?? []);
      break;
    case 'onPopUpChanged':
      popUp = event.data ? parsePopUp(event.data) : null;
      renderPopUp();
      break;
    // A custom message never becomes the card, whatever it looks like: any member may send one,
    // so only the server's onPopUpChanged (an anchor's pop of a catalogue product) shows it.
    case 'onBuyResult':
      showBuyResult(event);
      break;
  }
}

// MARK: start

async function credentials() {
  if (userId && userSig) return true;
  if (!development) {
    showState('open this page with ?userId=…&userSig=… (a UserSig of this application)');
    return false;
  }
  // Development mode only: the server signs a UserSig for a random viewer id.
  const response = await fetch(`/watch/${encodeURIComponent(room)}/usersig`, { method: 'POST', cache: 'no-store' });
  if (!response.ok) { showState(`no UserSig: ${response.status}`); return false; }
  const answer = await response.json();
  userId = String(answer.userId);
  userSig = String(answer.userSig);
  return true;
}

async function start() {
  $('room').textContent = room;
  document.title = `${room} · LiveRoom`;
  $('buy').addEventListener('click', () => { if (popUp) buyProduct(popUp.itemNumber); });
  const video = $('video');
  $('unmute').addEventListener('click', () => { video.muted = false; $('unmute').hidden = true; });
  video.addEventListener('playing', () => { if (video.muted) $('unmute').hidden = false; });
  showState();
  if (!(await credentials())) return;
  $('viewer').textContent = `watching as ${userId}`;
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  signaling = new Signaling({
    url: `${scheme}://${location.host}/ws`,
    enter: {
      type: 'enterRoom', sdkAppId, userId, userSig, strRoomId: room, role: 'audience', scene: 'live',
      ...(privateMapKey ? { privateMapKey } : {}),
    },
    onEvent: handle,
    onState: (state) => {
      connection = state;
      if (state !== 'open') {
        // The room tells everything again after the next enter.
        anchors.clear();
        if (state === 'gave-up') { current = null; player.stop(); }
        renderAnchors();
      }
      showState();
    },
  });
  signaling.start();
}

// For tests and diagnostics: what the player decoded.
window.liveroomWatch = {
  framesDecoded: () => player.framesDecoded(),
  get anchor() { return current; },
  get whepLocation() { return player.location; },
  get seiPopUps() { return seiPopUps; },
};

start();
