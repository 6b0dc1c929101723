/**
 * Compute Engine's regions and the country each stands in, for the
 * contract's `location.country`. A region missing here (a new one) is
 * reported without a country until it is added.
 *
 * @module
 */

/** Region name → ISO 3166-1 alpha-2 country code. */
export const REGION_COUNTRY: Readonly<Record<string, string>> = Object.freeze({
  'africa-south1': 'ZA',
  'asia-east1': 'TW',
  'asia-east2': 'HK',
  'asia-northeast1': 'JP',
  'asia-northeast2': 'JP',
  'asia-northeast3': 'KR',
  'asia-south1': 'IN',
  'asia-south2': 'IN',
  'asia-southeast1': 'SG',
  'asia-southeast2': 'ID',
  'australia-southeast1': 'AU',
  'australia-southeast2': 'AU',
  'europe-central2': 'PL',
  'europe-north1': 'FI',
  'europe-north2': 'SE',
  'europe-southwest1': 'ES',
  'europe-west1': 'BE',
  'europe-west2': 'GB',
  'europe-west3': 'DE',
  'europe-west4': 'NL',
  'europe-west6': 'CH',
  'europe-west8': 'IT',
  'europe-west9': 'FR',
  'europe-west10': 'DE',
  'europe-west12': 'IT',
  'me-central1': 'QA',
  'me-central2': 'SA',
  'me-west1': 'IL',
  'northamerica-northeast1': 'CA',
  'northamerica-northeast2': 'CA',
  'northamerica-south1': 'MX',
  'southamerica-east1': 'BR',
  'southamerica-west1': 'CL',
  'us-central1': 'US',
  'us-east1': 'US',
  'us-east4': 'US',
  'us-east5': 'US',
  'us-south1': 'US',
  'us-west1': 'US',
  'us-west2': 'US',
  'us-west3': 'US',
  'us-west4': 'US',
});
