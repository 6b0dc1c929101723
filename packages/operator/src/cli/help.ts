/**
 * `proxy-op help`: the commands, one line each.
 *
 * @module
 */
import { DEFAULTS } from '../defaults.js';

/** The usage text: every command. */
export const USAGE = `usage: proxy-op <command> [flags]

commands:
  run                    reconcile the Proxies of the Kubernetes cluster (kubeconfig or in-cluster)
  run --standalone DIR   reconcile the Proxy manifests in DIR (state in DIR${DEFAULTS.stateFileSuffix})
  down --standalone DIR  delete every Proxy of DIR's state file and its proxy, then exit
  check                  run every provider's health check once; exit 1 when a target is not ready
  validate               validate the providers file (and, with --standalone, the manifests)
  status --standalone DIR
                         print the Proxies and their status from the state file
  probe NAME             probe one Proxy through its data plane now and print each step
  url NAME               print the Proxy's URL with its credential, for a client to use
  url POOL --pool        print a ProxyPool gateway's URL, with --session, --rotate, --country,
                         --region, --provider in its user name; --socks for socks5h://
  ban POOL MEMBER        tell a pool's gateway a host banned MEMBER (--host H --for 30m)
  endpoints POOL         print a ProxyPool's verified endpoints, one URL per line (with credentials)
  gateway                one proxy address in front of a ProxyPool's verified Proxies
  whoami                 serve the probe target on its own (for probe.url in the providers file)
  crds                   print the CustomResourceDefinitions of Proxy and ProviderHealth
  help                   print this text

Run "proxy-op <command> --help" for the command's flags.
`;

/** Runs `proxy-op help`; resolves with the exit code. */
export async function help(): Promise<number> {
  process.stdout.write(USAGE);
  return 0;
}
