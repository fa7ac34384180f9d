// Generates jsdiff_vectors.json: line-diff runs and hunk diffs computed by the real jsdiff 9.0.0
// structuredPatch(…, {context: 3}) the way upstream's computeHunkDiffs uses
// it, for the Go port's table test (diff_test.go).
//
//   npm install diff@9.0.0 && node gen_jsdiff_vectors.js > jsdiff_vectors.json
'use strict'
const { structuredPatch, diffLines } = require('diff')

// runs is jsdiff's change list as [op, count] pairs, op one of = - +.
function runs(a, b) {
  return diffLines(a, b).map((c) => [c.added ? '+' : c.removed ? '-' : '=', c.count])
}

function hunks(path, a, b) {
  const p = structuredPatch(path, path, a, b, '', '', { context: 3 })
  return p.hunks.map((h) => {
    const oldLines = []
    const newLines = []
    for (const l of h.lines) {
      if (l.startsWith('\\')) continue
      const op = l[0]
      const t = l.slice(1)
      if (op !== '+') oldLines.push(t)
      if (op !== '-') newLines.push(t)
    }
    return { path, oldText: oldLines.length ? oldLines.join('\n') : null, newText: newLines.join('\n') }
  })
}

// Deterministic PRNG (mulberry32).
let seed = 0x5eed
function rand() {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)]

function randomText(alphabet, maxLines) {
  const n = Math.floor(rand() * (maxLines + 1))
  const lines = []
  for (let i = 0; i < n; i++) lines.push(pick(alphabet))
  let s = lines.join('\n')
  if (n > 0 && rand() < 0.7) s += '\n'
  return s
}

function mutate(text, alphabet) {
  const lines = text.split('\n')
  const edits = 1 + Math.floor(rand() * 4)
  for (let e = 0; e < edits; e++) {
    const i = Math.floor(rand() * (lines.length + 1))
    const r = rand()
    if (r < 0.33) lines.splice(i, 0, pick(alphabet))
    else if (r < 0.66) lines.splice(i, 1)
    else lines[Math.min(i, lines.length - 1)] = pick(alphabet)
  }
  return lines.join('\n')
}

const cases = []
const fixed = [
  ['mode=DEBUG\nlevel=info\n', 'mode=RELEASE\nlevel=info\n'],
  ['', ''],
  ['', 'a\nb'],
  ['a\nb\n', ''],
  ['a', 'a\n'],
  ['a\nb\n', 'b\na\n'],
  ['a\nb\nc\n', 'c\nb\na\n'],
  ['x\n\n\ny\n', 'x\n\ny\n'],
  ['\n\n\n', '\n\n'],
]
for (const [a, b] of fixed) cases.push({ old: a, new: b, runs: runs(a, b), diffs: hunks('f.txt', a, b) })

const small = ['a', 'b', 'c', '']
const medium = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', '', '}', '{']
for (let i = 0; i < 300; i++) {
  const a = randomText(small, 10)
  const b = rand() < 0.5 ? randomText(small, 10) : mutate(a, small)
  cases.push({ old: a, new: b, runs: runs(a, b), diffs: hunks('f.txt', a, b) })
}
for (let i = 0; i < 200; i++) {
  const a = randomText(medium, 40)
  const b = mutate(mutate(a, medium), medium)
  cases.push({ old: a, new: b, runs: runs(a, b), diffs: hunks('f.txt', a, b) })
}
process.stdout.write(JSON.stringify(cases) + '\n')
