// @ts-check
// Paths as a tree (the review's changed files): directories first, each level sorted, a
// directory with a single subdirectory and no file of its own folded into one row
// ("src/server"), as code hosts show them. Pure: node:test covers it.

/**
 * @template T
 * @typedef {{name: string, path: string, dirs: TreeDir<T>[], files: {name: string, item: T}[]}} TreeDir
 */

/**
 * @template T
 * @param {T[]} items
 * @param {(item: T) => string} pathOf
 * @returns {TreeDir<T>}
 */
export function buildTree(items, pathOf) {
  /** @type {TreeDir<T>} */
  const root = { name: "", path: "", dirs: [], files: [] };
  for (const item of items) {
    const parts = pathOf(item).split("/").filter(Boolean);
    let dir = root;
    for (const part of parts.slice(0, -1)) {
      let next = dir.dirs.find((d) => d.name === part);
      if (!next) {
        next = { name: part, path: dir.path ? `${dir.path}/${part}` : part, dirs: [], files: [] };
        dir.dirs.push(next);
      }
      dir = next;
    }
    dir.files.push({ name: parts[parts.length - 1] || pathOf(item), item });
  }
  return sortAndFold(root);
}

/**
 * @template T
 * @param {TreeDir<T>} dir
 * @returns {TreeDir<T>}
 */
function sortAndFold(dir) {
  const byName = (a, b) => a.name.localeCompare(b.name);
  dir.dirs = dir.dirs.map((d) => {
    let folded = sortAndFold(d);
    while (folded.files.length === 0 && folded.dirs.length === 1) {
      const only = folded.dirs[0];
      folded = { ...only, name: `${folded.name}/${only.name}` };
    }
    return folded;
  }).sort(byName);
  dir.files.sort(byName);
  return dir;
}
