/**
 * Deliberate defects the reference provider can be built with. Each one
 * breaks one rule of the contract; the conformance kit's self-test checks
 * that the test aimed at it fails.
 */
export const FLAWS = {
  'repeat-create-duplicates': 'a repeated create makes a second instance',
  'running-without-ip': 'reports Running without an IP',
  'not-found-while-locked': 'answers NotFound while the instance is locked',
  'ignores-signal': 'never looks at the AbortSignal',
  'logs-cloud-init': 'logs the cloud-init text',
  'adopts-foreign-instances':
    'adopts an instance with another UID, no mark or another installation',
  'lists-other-installations': "lists other installations' instances",
  'unknown-state-not-stopped': 'maps an unknown backend state to Provisioning',
  'reads-mark-from-memory': 'answers UID and creation time from memory, not the backend',
  'delete-not-idempotent': 'answers NotFound when deleting what is gone',
  'leaks-credential': "puts the backend's answer, which echoes the credential, into errors",
  'no-child-spans': 'makes no span per backend call',
  'lax-id-parsing': 'accepts malformed provider IDs',
  'placement-checked-late': 'calls the backend before checking placement',
  'list-drops-empty-uid': 'leaves marked instances with an empty UID out of the list',
  'not-found-during-delete': 'answers NotFound while a delete is still in progress',
  'never-started-is-stopped': 'reports a created but never started instance as Stopped',
  'check-unordered': 'returns Checker results in completion order, not config order',
  'check-ignores-signal': 'lets the Checker run past its signal',
  'wrong-provider-name': 'names its type instead of its configured name in errors',
} as const;

/** One deliberate defect. */
export type Flaw = keyof typeof FLAWS;
