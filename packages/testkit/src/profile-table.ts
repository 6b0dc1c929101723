/**
 * The check that a provider README's profile table (`| axis | ... |`)
 * says what the exported profile does: a row for every axis, its cell
 * starting with the exported choice in backticks (`none` for an empty
 * list, the object's JSON for a structured choice).
 *
 * @module
 */

/** The cells of a README's profile table, by axis: the first table whose header starts `| axis |`. */
function profileRows(readme: string): Map<string, string> {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| axis |'));
  const rows = new Map<string, string>();
  if (start < 0) return rows;
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [, axis = '', cell = ''] = line.split('|').map((c) => c.trim());
    rows.set(axis, cell);
  }
  return rows;
}

/** How a table cell starts for a choice. */
export function profileCellStart(choice: unknown): string {
  if (Array.isArray(choice)) return choice.length === 0 ? 'none' : `\`${choice.join('`, `')}\``;
  if (choice !== null && typeof choice === 'object') return `\`${JSON.stringify(choice)}\``;
  return `\`${String(choice)}\``;
}

/**
 * What the README's profile table gets wrong about `profile`, one message
 * per axis of `axes` (the contract's `PROFILE_AXES`): an axis the profile
 * leaves out, a missing row, a row that starts with another choice. Empty
 * when the table and the profile agree.
 */
export function profileTableProblems(
  readme: string,
  profile: object,
  axes: readonly string[],
): string[] {
  const rows = profileRows(readme);
  const problems: string[] = [];
  for (const axis of axes) {
    const choice: unknown = (profile as Readonly<Record<string, unknown>>)[axis];
    if (choice === undefined) {
      problems.push(`profile.${axis}: not declared (declare it, even where it may be left out)`);
      continue;
    }
    const start = profileCellStart(choice);
    const row = rows.get(axis);
    if (row === undefined) problems.push(`the profile table has no row for ${axis}`);
    else if (!row.startsWith(start)) {
      const shown = row.length > 60 ? `${row.slice(0, 60)}…` : row;
      problems.push(`the row of ${axis} says "${shown}", which does not start "${start}"`);
    }
  }
  return problems;
}
