// Test support (not a test file), run before each test file: loads @aws-sdk/client-ec2 and sends
// one request to a closed loopback port, so that the first load of the SDK and of what it loads
// on first use (signing, serializer, HTTP handler; seconds on a busy machine) is paid here, and
// not by the first backend call of a test, whose budget (3 s in the fixtures) it would eat.
const sdk = await import('@aws-sdk/client-ec2');
const client = new sdk.EC2Client({
  region: 'eu-central-1',
  endpoint: 'http://127.0.0.1:9',
  maxAttempts: 1,
  credentials: { accessKeyId: 'AKIDWARMUP', secretAccessKey: 'warm-up-only' },
});
await client.send(new sdk.DescribeInstancesCommand({ MaxResults: 5 })).catch(() => undefined);
client.destroy();
