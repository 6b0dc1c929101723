// Peer: none (packet layouts, in-process).
import { describe, expect, it } from 'vitest';
import {
  decodeHeader,
  encodeCall,
  encodePacket,
  MessageStatus,
  MessageType,
  Proc,
  procedures,
  REMOTE_PROGRAM,
  remoteErrorCodec,
} from '../src/protocol.js';
import { decode, encode } from '../src/xdr.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('packet framing', () => {
  it('frames a CONNECT_GET_LIB_VERSION call', () => {
    const bytes = encodePacket({
      prog: REMOTE_PROGRAM,
      vers: 1,
      proc: Proc.CONNECT_GET_LIB_VERSION,
      type: MessageType.CALL,
      serial: 5,
      status: MessageStatus.OK,
    });
    expect(bytes).toEqual(
      hex(
        '0000001c' + // length 28, counting itself
          '20008086' + // prog: REMOTE_PROGRAM
          '00000001' + // vers 1
          '0000009d' + // proc 157: CONNECT_GET_LIB_VERSION
          '00000000' + // type CALL
          '00000005' + // serial 5
          '00000000', // status OK
      ),
    );
    expect(decodeHeader(bytes)).toEqual({
      prog: REMOTE_PROGRAM,
      vers: 1,
      proc: 157,
      type: 0,
      serial: 5,
      status: 0,
    });
  });

  it('frames DOMAIN_LOOKUP_BY_NAME with its argument', () => {
    const p = procedures.domainLookupByName;
    const bytes = encodeCall(
      { prog: REMOTE_PROGRAM, vers: 1, proc: p.proc, type: 0, serial: 2, status: 0 },
      p.args,
      { name: 'vm' },
    );
    expect(bytes).toEqual(
      hex(
        '00000024' + // length 36
          '20008086 00000001' + // prog, vers
          '00000017' + // proc 23: DOMAIN_LOOKUP_BY_NAME
          '00000000 00000002 00000000' + // CALL, serial 2, OK
          '00000002 766d0000', // name: "vm" padded
      ),
    );
  });

  it('decodes a DOMAIN_GET_STATE reply and refuses one with extra bytes', () => {
    const ret = procedures.domainGetState.ret;
    expect(
      decode(
        ret,
        hex(
          '00000001' + // state: RUNNING
            '00000001', // reason: BOOTED
        ),
      ),
    ).toEqual({ state: 1, reason: 1 });
    expect(() => decode(ret, hex('00000001 00000001 00000000'))).toThrow(/leftover/);
  });

  it('decodes remote_error as libvirt sends it for a missing domain', () => {
    const body = hex(
      '0000002a' + // code 42: VIR_ERR_NO_DOMAIN
        '0000000c' + // domain 12: VIR_FROM_TEST
        '00000001 00000010' + // message present, 16 bytes
        '446f6d61696e206e6f7420666f756e64' + // "Domain not found"
        '00000002' + // level 2: error
        '00000000' + // dom absent
        '00000000 00000000 00000000' + // str1, str2, str3 absent
        '00000000 00000000' + // int1, int2
        '00000000', // net absent
    );
    const e = decode(remoteErrorCodec, body);
    expect(e).toMatchObject({ code: 42, domain: 12, level: 2, message: 'Domain not found' });
    expect(encode(remoteErrorCodec, e)).toEqual(body);
  });

  it('lays out STORAGE_VOL_UPLOAD arguments as vol, offset, length, flags', () => {
    const p = procedures.storageVolUpload;
    expect(
      encode(p.args, {
        vol: { pool: 'p', name: 'v', key: 'k' },
        offset: 0,
        length: 4096,
        flags: 0,
      }),
    ).toEqual(
      hex(
        '00000001 70000000' + // pool "p"
          '00000001 76000000' + // name "v"
          '00000001 6b000000' + // key "k"
          '00000000 00000000' + // offset 0 (unsigned hyper)
          '00000000 00001000' + // length 4096
          '00000000', // flags
      ),
    );
  });

  it('lays out STORAGE_POOL_LIST_ALL_VOLUMES as pool, need_results, flags and reads volume handles back', () => {
    const p = procedures.storagePoolListAllVolumes;
    expect(p.proc).toBe(282);
    const uuid = Buffer.alloc(16, 0xab);
    expect(encode(p.args, { pool: { name: 'p', uuid }, needResults: 1, flags: 0 })).toEqual(
      hex(
        '00000001 70000000' + // pool name "p"
          'abababab abababab abababab abababab' + // pool uuid (16 opaque bytes)
          '00000001' + // need_results 1
          '00000000', // flags
      ),
    );
    const reply = hex(
      '00000001' + // one volume
        '00000001 70000000' + // its pool "p"
        '00000005 612e697a 6f000000' + // its name "a.izo"
        '00000008 2f702f61 2e697a6f' + // its key "/p/a.izo"
        '00000001', // ret: the count
    );
    expect(decode(p.ret, reply)).toEqual({
      vols: [{ pool: 'p', name: 'a.izo', key: '/p/a.izo' }],
      ret: 1,
    });
  });
});
