/**
 * Amazon EC2's regions and the country each stands in, for the contract's
 * `location.country`. A region missing here (a new one) is reported without
 * a country until it is added.
 *
 * @module
 */

/** Region name → ISO 3166-1 alpha-2 country code. */
export const REGION_COUNTRY: Readonly<Record<string, string>> = Object.freeze({
  'af-south-1': 'ZA',
  'ap-east-1': 'HK',
  'ap-east-2': 'TW',
  'ap-northeast-1': 'JP',
  'ap-northeast-2': 'KR',
  'ap-northeast-3': 'JP',
  'ap-south-1': 'IN',
  'ap-south-2': 'IN',
  'ap-southeast-1': 'SG',
  'ap-southeast-2': 'AU',
  'ap-southeast-3': 'ID',
  'ap-southeast-4': 'AU',
  'ap-southeast-5': 'MY',
  'ap-southeast-6': 'NZ',
  'ap-southeast-7': 'TH',
  'ca-central-1': 'CA',
  'ca-west-1': 'CA',
  'cn-north-1': 'CN',
  'cn-northwest-1': 'CN',
  'eu-central-1': 'DE',
  'eu-central-2': 'CH',
  'eu-north-1': 'SE',
  'eu-south-1': 'IT',
  'eu-south-2': 'ES',
  'eu-west-1': 'IE',
  'eu-west-2': 'GB',
  'eu-west-3': 'FR',
  'il-central-1': 'IL',
  'me-central-1': 'AE',
  'me-south-1': 'BH',
  'mx-central-1': 'MX',
  'sa-east-1': 'BR',
  'us-east-1': 'US',
  'us-east-2': 'US',
  'us-gov-east-1': 'US',
  'us-gov-west-1': 'US',
  'us-west-1': 'US',
  'us-west-2': 'US',
});
