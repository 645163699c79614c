// Renders one MCP App view (a tool call's) in a sandboxed frame and speaks
// the ui/* protocol to it through ext-apps' AppBridge: the view gets the
// call's input and result, its size is followed, its own tool calls go to
// mcpw (/api/views/<id>/call), and it is torn down when the page goes.
import { AppBridge, PostMessageTransport } from './ext-apps-bridge.js';

const TOKEN_KEY = 'mcpw-token';
const $ = (s) => document.querySelector(s);
const fragment = new URLSearchParams(location.hash.slice(1));
const id = fragment.get('view') || '';
// A token given in the address goes to this tab's storage, and out of the address.
if (fragment.get('token')) sessionStorage.setItem(TOKEN_KEY, fragment.get('token'));
history.replaceState(null, '', `${location.pathname}#view=${encodeURIComponent(id)}`);

function state(name, text) {
  document.body.dataset.bridge = name;
  $('#state').textContent = text || name;
}

function event(text) {
  const li = document.createElement('li');
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  $('#events').append(li);
}

async function api(path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const init = { headers, cache: 'no-store' };
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 401) throw Object.assign(new Error('this gateway wants an access token'), { login: true });
  if (!res.ok) throw new Error(await res.text());
  return res.json();
}

function askToken() {
  const form = $('#login');
  form.hidden = false;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, form.elements.token.value.trim());
    location.reload();
  }, { once: true });
}

async function appCall(params) {
  event(`the view calls ${params.name}`);
  const result = await api(`/api/views/${encodeURIComponent(id)}/call`, { name: params.name, arguments: params.arguments || {} });
  document.body.dataset.calls = String(Number(document.body.dataset.calls) + 1);
  event(`${params.name} ${result.isError ? 'failed' : 'answered'}`);
  return result;
}

function bridgeFor(view, frame) {
  const host = { name: 'mcpw', version: '1' };
  const capabilities = { serverTools: {}, openLinks: {}, logging: {} };
  const hostContext = {
    theme: matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light',
    displayMode: 'inline', availableDisplayModes: ['inline'], platform: 'web',
    toolInfo: { tool: { name: view.tool, inputSchema: { type: 'object' } } },
  };
  const bridge = new AppBridge(null, host, capabilities, { hostContext });
  bridge.oncalltool = (params) => appCall(params);
  bridge.onsizechange = ({ height }) => { if (height) frame.style.height = `${Math.ceil(height)}px`; };
  bridge.onopenlink = async ({ url }) => {
    event(`the view opens ${url}`);
    window.open(url, '_blank', 'noopener,noreferrer');
    return {};
  };
  bridge.onmessage = async () => {
    event('the view sent a message for the conversation: mcpw has none to put it in');
    return { isError: true };
  };
  bridge.onloggingmessage = ({ level, data }) => event(`log ${level}: ${typeof data === 'string' ? data : JSON.stringify(data)}`);
  bridge.onrequestteardown = () => teardown(bridge, frame);
  bridge.oninitialized = async () => {
    state('initialized');
    event('the view is initialized');
    await bridge.sendToolInput({ arguments: view.arguments });
    await bridge.sendToolResult(view.result);
    state('result-sent', 'showing the result');
    event('the view has the call\'s input and result');
  };
  return bridge;
}

async function teardown(bridge, frame) {
  try { await bridge.teardownResource({}); } catch { /* the view is gone already */ }
  frame.remove();
  state('closed');
}

async function main() {
  if (!id) return state('failed', 'no view named in the address');
  let view;
  try {
    view = await api(`/api/views/${encodeURIComponent(id)}`);
  } catch (e) {
    if (e.login) askToken();
    $('#message').textContent = e.message;
    return state('failed', 'not shown');
  }
  document.title = `mcpw · ${view.name}`;
  $('#title').textContent = view.name;
  $('#tool').textContent = `${view.server} · ${view.uri}`;
  const frame = document.createElement('iframe');
  frame.id = 'frame';
  // Scripts, no origin of its own: the view reaches neither this page nor its token.
  frame.setAttribute('sandbox', 'allow-scripts allow-forms');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.title = view.name;
  $('#holder').append(frame);
  const bridge = bridgeFor(view, frame);
  // Listening before the view loads: its first message is its initialize.
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.src = `/views/${encodeURIComponent(id)}`;
  state('connecting');
  addEventListener('pagehide', () => teardown(bridge, frame));
}

main();
