// tests/integration/hub_server.mjs — a Hugging Face Hub stand-in for tests/integration/hub_test.cpp, on
// 127.0.0.1 only (port 0; prints "PORT <n>" once listening). It serves the repos that ROOT/repos.json
// describes with the Hub's endpoints and headers, as huggingface_hub expects them:
//   GET  /api/models/{org}/{name}/revision/{rev}  -> {"id", "sha", "siblings": [{"rfilename"}]}
//   HEAD/GET /{org}/{name}/resolve/{rev}/{file}   -> regular files: 200, ETag = git blob sha1, X-Repo-Commit;
//        LFS files (*.safetensors, *.model, *.bin): 302 to /lfs-blobs/{sha256} with X-Linked-Etag (sha256),
//        X-Linked-Size, ETag = the git sha1 of the LFS pointer file, X-Repo-Commit
//   GET  /lfs-blobs/{sha256}?repo=..&file=..       -> the bytes, with Range (206 + Content-Range)
// Errors carry X-Error-Code like the Hub: 404 RepoNotFound / RevisionNotFound / EntryNotFound, 401 GatedRepo
// for a gated repo without its token.
//
// repos.json: {"org/name": {"refs": {"main": SHA}, "commits": {SHA: "/path/to/folder"}, "token": "..."}}
// ("token" present: the repo is gated and needs "Authorization: Bearer <token>").
// ROOT/controls.json (read on every request, optional): {"drop_once": ["org/name/file"], "corrupt": [..]}:
// drop_once sends half of that file's bytes then destroys the socket, once per distinct controls.json;
// corrupt serves the file with one byte flipped (same size); "blob_delay_ms": N holds every blob answer
// N ms (to see downloads overlap). Every request is appended to ROOT/requests.log as one JSON line
// {method, url, range, auth, t (ms)} before it is answered.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const root = process.argv[2];
if (!root) {
  console.error('usage: node hub_server.mjs ROOT');
  process.exit(2);
}
const logPath = path.join(root, 'requests.log');
const dropped = new Set();
const digests = new Map();  // absolute path -> {sha256, sha1, size}

const readJson = (p, fallback) => (fs.existsSync(p) ? JSON.parse(fs.readFileSync(p, 'utf8')) : fallback);
const isLfs = (file) => /\.(safetensors|model|bin|onnx)$/.test(file);

function digest(abs) {
  if (!digests.has(abs)) {
    const data = fs.readFileSync(abs);
    const sha1 = createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
    const sha256 = createHash('sha256').update(data).digest('hex');
    const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${data.length}\n`;
    const pointerSha1 = createHash('sha1').update(`blob ${pointer.length}\0${pointer}`).digest('hex');
    digests.set(abs, { sha1, sha256, pointerSha1, size: data.length });
  }
  return digests.get(abs);
}

function listFiles(dir, prefix = '') {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix + e.name;
    if (e.isDirectory()) out.push(...listFiles(path.join(dir, e.name), rel + '/'));
    else out.push(rel);
  }
  return out.sort();
}

function fail(res, status, code, message) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'X-Error-Code': code, 'X-Error-Message': message });
  res.end(JSON.stringify({ error: message }));
}

// The repo and commit a request names, or an error answer already sent (null).
function lookup(req, res, repoId, rev) {
  const repos = readJson(path.join(root, 'repos.json'), {});
  const repo = repos[repoId];
  if (!repo) return fail(res, 404, 'RepoNotFound', 'Repository not found'), null;
  if (repo.token && req.headers.authorization !== `Bearer ${repo.token}`)
    return fail(res, 401, 'GatedRepo', `Access to model ${repoId} is restricted.`), null;
  const sha = repo.commits[rev] ? rev : repo.refs[rev];
  if (!sha || !repo.commits[sha]) return fail(res, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`), null;
  return { sha, dir: repo.commits[sha] };
}

function sendBytes(req, res, data, headers, control) {
  const { drop, corrupt } = control;
  if (corrupt) {
    data = Buffer.from(data);
    data[data.length >> 1] ^= 0xff;
  }
  let start = 0;
  const m = /^bytes=(\d+)-$/.exec(req.headers.range || '');
  if (m) {
    start = Number(m[1]);
    if (start >= data.length) {
      res.writeHead(416, { 'Content-Range': `bytes */${data.length}` });
      return res.end();
    }
  }
  const body = data.subarray(start);
  const h = { ...headers, 'Accept-Ranges': 'bytes', 'Content-Length': String(body.length) };
  if (m) h['Content-Range'] = `bytes ${start}-${data.length - 1}/${data.length}`;
  res.writeHead(m ? 206 : 200, h);
  if (req.method === 'HEAD') return res.end();
  if (drop) {
    res.write(body.subarray(0, body.length >> 1), () => setTimeout(() => res.socket.destroy(), 20));
    return;
  }
  res.end(body);
}

function controlFor(key) {
  const text = fs.existsSync(path.join(root, 'controls.json')) ? fs.readFileSync(path.join(root, 'controls.json'), 'utf8') : '{}';
  const c = JSON.parse(text);
  const once = `${text}|${key}`;
  const drop = (c.drop_once || []).includes(key) && !dropped.has(once);
  if (drop) dropped.add(once);
  return { drop, corrupt: (c.corrupt || []).includes(key) };
}

function handle(req, res, port) {
  const url = new URL(req.url, `http://127.0.0.1:${port}`);
  fs.appendFileSync(logPath, JSON.stringify({ method: req.method, url: req.url, range: req.headers.range || '',
                                              auth: req.headers.authorization || '', t: Date.now() }) + '\n');
  let m = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
  if (m && req.method === 'GET') {
    const repoId = decodeURIComponent(m[1]);
    const found = lookup(req, res, repoId, decodeURIComponent(m[2]));
    if (!found) return;
    const siblings = listFiles(found.dir).map((rfilename) => ({ rfilename }));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end(JSON.stringify({ id: repoId, modelId: repoId, sha: found.sha, siblings }));
  }
  m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
  if (m && (req.method === 'GET' || req.method === 'HEAD')) {
    const repoId = decodeURIComponent(m[1]);
    const file = decodeURIComponent(m[3]);
    const found = lookup(req, res, repoId, decodeURIComponent(m[2]));
    if (!found) return;
    const abs = path.join(found.dir, file);
    if (file.includes('..') || !fs.existsSync(abs)) return fail(res, 404, 'EntryNotFound', `${file} does not exist`);
    const d = digest(abs);
    if (isLfs(file)) {
      const location = `http://127.0.0.1:${port}/lfs-blobs/${d.sha256}?repo=${encodeURIComponent(repoId)}` +
                       `&file=${encodeURIComponent(file)}&commit=${found.sha}`;
      res.writeHead(302, { Location: location, ETag: `"${d.pointerSha1}"`, 'X-Linked-Etag': `"${d.sha256}"`,
                           'X-Linked-Size': String(d.size), 'X-Repo-Commit': found.sha, 'Content-Length': '0' });
      return res.end();
    }
    return sendBytes(req, res, fs.readFileSync(abs), { ETag: `"${d.sha1}"`, 'X-Repo-Commit': found.sha },
                     controlFor(`${repoId}/${file}`));
  }
  m = /^\/lfs-blobs\/([0-9a-f]{64})$/.exec(url.pathname);
  if (m && (req.method === 'GET' || req.method === 'HEAD')) {
    const repoId = url.searchParams.get('repo'), file = url.searchParams.get('file');
    // Like the Hub's signed CDN URLs, the blob URL itself needs no token.
    const repo = readJson(path.join(root, 'repos.json'), {})[repoId];
    const dir = repo && repo.commits[url.searchParams.get('commit')];
    const abs = dir && !file.includes('..') && path.join(dir, file);
    if (!abs || !fs.existsSync(abs) || digest(abs).sha256 !== m[1]) return fail(res, 404, 'EntryNotFound', 'no such blob');
    const send = () => sendBytes(req, res, fs.readFileSync(abs), { ETag: `"${m[1]}"` }, controlFor(`${repoId}/${file}`));
    const delay = readJson(path.join(root, 'controls.json'), {}).blob_delay_ms || 0;
    return delay ? setTimeout(send, delay) : send();
  }
  fail(res, 404, 'RepoNotFound', `no route for ${req.method} ${url.pathname}`);
}

const server = http.createServer((req, res) => {
  try {
    handle(req, res, server.address().port);
  } catch (e) {
    res.writeHead(500, { 'Content-Type': 'text/plain' });
    res.end(String(e && e.stack || e));
  }
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
// The test closes our stdin when it is done (or dies): stop then.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
