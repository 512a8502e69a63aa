;; The smallest proxy-wasm HTTP plugin that does something visible: every response gets
;; the header `x-wasm: pilothouse`. Written for pilothouse's tests (ABI 0.2.1).
;;
;; What Envoy's Wasm host requires: an exported `proxy_abi_version_0_2_1` marker, an
;; allocator (`malloc`, here a bump allocator: the host copies the plugin and VM
;; configuration in through it) and a memory. The callbacks it calls are optional; those
;; given must have the ABI's exact signatures. `proxy_add_header_map_value` takes the map
;; (2: response headers), then the key and the value as (pointer, length) pairs.
(module
  (import "env" "proxy_add_header_map_value"
    (func $add_header (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 16) "x-wasm")
  (data (i32.const 32) "pilothouse")
  (func (export "proxy_abi_version_0_2_1"))
  (func (export "malloc") (param $size i32) (result i32)
    (local $at i32)
    (local.set $at (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get $size)))
    (local.get $at))
  (func (export "proxy_on_context_create") (param i32 i32))
  (func (export "proxy_on_vm_start") (param i32 i32) (result i32) (i32.const 1))
  (func (export "proxy_on_configure") (param i32 i32) (result i32) (i32.const 1))
  (func (export "proxy_on_response_headers") (param i32 i32 i32) (result i32)
    (drop (call $add_header
      (i32.const 2) (i32.const 16) (i32.const 6) (i32.const 32) (i32.const 10)))
    (i32.const 0)))
