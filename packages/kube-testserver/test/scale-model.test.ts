// Peer: none; the scale model's functions on their own, held to the Go functions they stand for
// (unstructured.NestedInt64/NestedString, encoding/json's type errors, the validator's messages).
import { describe, expect, it } from 'vitest';
import {
  decodeScale,
  goFormat,
  type ScaleSubresource,
  scaleFromCustomResource,
  validateScalePaths,
} from '../src/scale.js';

const scale: ScaleSubresource = {
  specReplicasPath: '.spec.members',
  statusReplicasPath: '.status.ready',
  labelSelectorPath: '.status.selector',
};

describe('the replicas and selector paths of a custom resource', () => {
  it('reports accessor errors in NestedInt64 and NestedString words', () => {
    expect(validateScalePaths({ spec: { members: 'five' } }, scale)).toEqual([
      {
        field: '.spec.members',
        reason: 'FieldValueInvalid',
        body: 'Invalid value: 0: .spec.members accessor error: five is of the type string, expected int64',
      },
    ]);
    expect(validateScalePaths({ spec: { members: 1.5 } }, scale)[0]!.body).toBe(
      'Invalid value: 0: .spec.members accessor error: 1.5 is of the type float64, expected int64',
    );
    expect(validateScalePaths({ spec: 'x' }, scale)[0]!.body).toBe(
      'Invalid value: 0: .spec.members accessor error: x is of the type string, expected map[string]interface{}',
    );
    expect(validateScalePaths({ status: { selector: { app: 'a' } } }, scale)).toEqual([
      {
        field: '.status.selector',
        reason: 'FieldValueInvalid',
        body: 'Invalid value: "": .status.selector accessor error: map[app:a] is of the type map[string]interface {}, expected string',
      },
    ]);
  });

  it('bounds replicas to a non-negative int32', () => {
    expect(validateScalePaths({ spec: { members: 2147483648 } }, scale)[0]!.body).toBe(
      'Invalid value: 2147483648: should be less than or equal to 2147483647',
    );
    expect(validateScalePaths({ spec: { members: 0 }, status: { ready: 3 } }, scale)).toEqual([]);
    expect(validateScalePaths({}, scale)).toEqual([]);
  });

  it('reads a Scale, with zero status replicas when the path is unset', () => {
    const r = scaleFromCustomResource(
      {
        metadata: { name: 'a', namespace: 'ns', uid: 'u', resourceVersion: '4' },
        spec: { members: 2 },
      },
      scale,
    );
    expect(r).toEqual({
      replicasFound: true,
      scale: {
        kind: 'Scale',
        apiVersion: 'autoscaling/v1',
        metadata: {
          name: 'a',
          namespace: 'ns',
          uid: 'u',
          resourceVersion: '4',
          creationTimestamp: null,
        },
        spec: { replicas: 2 },
        status: { replicas: 0 },
      },
    });
    expect(scaleFromCustomResource({ metadata: { name: 'a' } }, scale)).toMatchObject({
      replicasFound: false,
    });
    expect(scaleFromCustomResource({ status: { ready: true } }, scale)).toEqual({
      error: '.status.ready accessor error: true is of the type bool, expected int64',
    });
  });

  it('prints values as Go %v prints decoded JSON', () => {
    expect(goFormat({ b: [1, 'x'], a: null })).toBe('map[a:<nil> b:[1 x]]');
  });
});

describe('a Scale body as the Go decoder reads it', () => {
  it('names the struct field and Go type of the first type error', () => {
    expect(decodeScale({ spec: { replicas: true } })).toEqual({
      error:
        'json: cannot unmarshal bool into Go struct field ScaleSpec.spec.replicas of type int32',
    });
    expect(decodeScale({ spec: { replicas: 2147483648 } })).toEqual({
      error:
        'json: cannot unmarshal number 2147483648 into Go struct field ScaleSpec.spec.replicas of type int32',
    });
    expect(decodeScale({ spec: [] })).toEqual({
      error: 'json: cannot unmarshal array into Go struct field Scale.spec of type v1.ScaleSpec',
    });
    expect(decodeScale({ metadata: { name: 3 } })).toEqual({
      error:
        'json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string',
    });
    expect(decodeScale({ status: { selector: 1 } })).toEqual({
      error:
        'json: cannot unmarshal number into Go struct field ScaleStatus.status.selector of type string',
    });
  });

  it('lists unknown fields for strict decoding and takes null replicas as zero', () => {
    expect(
      decodeScale({ metadata: { name: 'a', colour: 'x' }, spec: { replicas: null }, extra: 1 }),
    ).toEqual({
      scale: { name: 'a', namespace: '', resourceVersion: '', replicas: 0 },
      unknown: ['extra', 'metadata.colour'],
    });
  });
});
