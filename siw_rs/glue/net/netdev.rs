// SPDX-License-Identifier: GPL-2.0

//! Network devices (`struct net_device`) and the netdev notifier.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h).

use crate::glue::bindings;
use core::marker::PhantomData;
use kernel::{
    error::to_result,
    prelude::*,
    types::Opaque, //
};

/// Length of an Ethernet hardware address.
pub(crate) const ETH_ALEN: usize = 6;

/// A random, locally administered unicast MAC (`eth_random_addr`), for netdevs without one.
pub(crate) fn random_mac() -> [u8; ETH_ALEN] {
    let mut mac = [0u8; ETH_ALEN];
    // SAFETY: `mac` is `ETH_ALEN` writable bytes, which is what `eth_random_addr` fills.
    unsafe { bindings::eth_random_addr(mac.as_mut_ptr()) };
    mac
}

/// A borrowed `struct net_device`.
///
/// # Invariants
///
/// The wrapped `net_device` stays alive for the lifetime of every `&NetDev`: the code that
/// hands one out holds a reference on it or runs in a context (a notifier call, an
/// `rdma_link_ops` call under the RDMA netlink lock) that keeps it registered.
#[repr(transparent)]
pub(crate) struct NetDev(Opaque<bindings::net_device>);

/// The link-layer types (`ARPHRD_*`) a driver tells apart.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LinkType {
    /// Ethernet (`ARPHRD_ETHER`), veth included.
    Ether,
    /// IEEE 802.2 (`ARPHRD_IEEE802`).
    Ieee802,
    /// No link-layer header (`ARPHRD_NONE`), e.g. tun or wireguard.
    None,
    /// The loopback device (`ARPHRD_LOOPBACK`).
    Loopback,
    /// Anything else, with its `ARPHRD_*` value.
    Other(u16),
}

impl NetDev {
    /// Borrows a `net_device` from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `net_device` that stays alive for `'a` (see the type's
    /// invariants).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDev` is `repr(transparent)` over `Opaque<net_device>`, which has the
        // layout of `net_device`; the caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw pointer, for calls into C from this glue module.
    pub(in crate::glue) fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The device's link-layer type.
    pub(crate) fn link_type(&self) -> LinkType {
        // SAFETY: By the type invariant the device is alive; the helper only reads `type`.
        let t = unsafe { bindings::netdev_type(self.as_ptr()) };
        match u32::from(t) {
            bindings::ARPHRD_ETHER => LinkType::Ether,
            bindings::ARPHRD_IEEE802 => LinkType::Ieee802,
            bindings::ARPHRD_NONE => LinkType::None,
            bindings::ARPHRD_LOOPBACK => LinkType::Loopback,
            _ => LinkType::Other(t),
        }
    }

    /// The device's identity (its address), to recognise it later without keeping it.
    pub(crate) fn id(&self) -> usize {
        self.as_ptr() as usize
    }

    /// Whether the device lives in the calling task's network namespace.
    pub(crate) fn in_current_netns(&self) -> bool {
        // SAFETY: By the type invariant the device is alive; the calling task holds its own
        // namespace while it runs. Both only read a namespace's address.
        unsafe { core::ptr::eq(bindings::dev_net(self.as_ptr()), bindings::current_net()) }
    }

    /// The current MTU.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: By the type invariant the device is alive; the helper reads `mtu` with
        // `READ_ONCE`, as the MTU can change concurrently.
        unsafe { bindings::netdev_mtu(self.as_ptr()) }
    }

    /// The largest MTU the device supports.
    pub(crate) fn max_mtu(&self) -> u32 {
        // SAFETY: By the type invariant the device is alive; `max_mtu` is set by the driver
        // before registration and not changed afterwards.
        unsafe { (*self.as_ptr()).max_mtu }
    }

    /// The hardware address, if the device has an Ethernet-sized one or longer (only the first
    /// six bytes are returned, as the C siw does).
    pub(crate) fn hw_addr(&self) -> Option<[u8; ETH_ALEN]> {
        let dev = self.as_ptr();
        // SAFETY: By the type invariant the device is alive; `addr_len` is fixed for its life.
        let len = usize::from(unsafe { (*dev).addr_len });
        if len == 0 {
            return None;
        }
        let mut addr = [0u8; ETH_ALEN];
        // SAFETY: `dev_addr` points to `addr_len` valid bytes while the device lives, and we
        // copy at most that many into `addr`.
        let src = unsafe { (*dev).dev_addr };
        if src.is_null() {
            return None;
        }
        // SAFETY: As above: `src` is valid for `addr_len` bytes, `addr` for `ETH_ALEN`, and we
        // copy the smaller count; the regions cannot overlap (one is on our stack).
        unsafe { core::ptr::copy_nonoverlapping(src, addr.as_mut_ptr(), len.min(ETH_ALEN)) };
        Some(addr)
    }

    /// Whether the port on this device is up (`ib_get_curr_port_state() == IB_PORT_ACTIVE`).
    pub(crate) fn port_active(&self) -> bool {
        // SAFETY: By the type invariant the device is alive; the helper reads its flags.
        let state = unsafe { bindings::ib_get_curr_port_state(self.as_ptr()) };
        u32::try_from(state) == Ok(bindings::ib_port_state_IB_PORT_ACTIVE)
    }

    /// The interface index.
    pub(crate) fn ifindex(&self) -> i32 {
        // SAFETY: By the type invariant the device is alive; `ifindex` is set at registration
        // and not changed while the device is registered in its namespace.
        unsafe { bindings::netdev_ifindex(self.as_ptr()) }
    }

    /// The device's IPv4 and IPv6 addresses, as 16-octet IPv6 addresses (IPv4 ones mapped,
    /// `::ffff:a.b.c.d`), IPv4 first; at most `out.len()` of them. Returns how many.
    pub(crate) fn ip_addrs(&self, out: &mut [[u8; 16]]) -> usize {
        // SAFETY: By the type invariant the device is alive; `out` is `out.len()` writable
        // 16-byte arrays, and the helper writes at most that many.
        let n = unsafe { bindings::netdev_ip_addrs(self.as_ptr(), out.as_mut_ptr(), out.len()) };
        n.min(out.len())
    }

    /// The interface name (`IFNAMSIZ` bytes, NUL-padded).
    pub(crate) fn name_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        // SAFETY: By the type invariant the device is alive; `name` is an inline array, read
        // here as bytes. A concurrent rename can only change which NUL-padded name we see.
        let name = unsafe { (*self.as_ptr()).name };
        for (o, c) in out.iter_mut().zip(name.iter()) {
            *o = c.to_ne_bytes()[0];
        }
        out
    }
}

/// The netdev notifier events reported to drivers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Event {
    /// The device is being unregistered.
    Unregister,
    /// The hardware address changed.
    ChangeAddr,
    /// Any other event.
    Other,
}

/// A handler for netdev notifier events.
pub(crate) trait Notifier: Send + Sync + 'static {
    /// Called for every event on every network device, in the notifier's context (RTNL held).
    fn event(event: Event, dev: &NetDev);
}

/// A registered netdev notifier; unregistered on drop.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` for the whole life of the value.
#[pin_data(PinnedDrop)]
pub(crate) struct NotifierRegistration<T: Notifier> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _handler: PhantomData<T>,
}

// SAFETY: The registration only holds the `notifier_block`, which the notifier core protects
// with its own locks; it can be dropped (unregistered) from any thread.
unsafe impl<T: Notifier> Send for NotifierRegistration<T> {}
// SAFETY: `&NotifierRegistration` gives access to nothing.
unsafe impl<T: Notifier> Sync for NotifierRegistration<T> {}

impl<T: Notifier> NotifierRegistration<T> {
    /// Registers `T` as a netdev notifier.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            nb <- Opaque::try_ffi_init(|slot: *mut bindings::notifier_block| {
                let mut nb: bindings::notifier_block = pin_init::zeroed();
                nb.notifier_call = Some(Self::notifier_call);
                // SAFETY: `slot` is valid for writes and pinned; we initialise it fully.
                unsafe { slot.write(nb) };
                // INVARIANT: Registered here; `PinnedDrop` unregisters. On failure the value
                // is never created, so nothing is unregistered.
                // SAFETY: `slot` is initialised and pinned until `drop` unregisters it.
                to_result(unsafe { bindings::register_netdevice_notifier(slot) })
            }),
            _handler: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the notifier core with `ptr` a `netdev_notifier_info`.
    unsafe extern "C" fn notifier_call(
        _nb: *mut bindings::notifier_block,
        action: c_ulong,
        ptr: *mut c_void,
    ) -> c_int {
        // SAFETY: For netdev notifiers `ptr` is a `netdev_notifier_info`, whose `dev` is
        // alive for the duration of the call.
        let dev = unsafe { bindings::netdev_notifier_info_to_dev(ptr) };
        if dev.is_null() {
            return bindings::NOTIFY_DONE as c_int;
        }
        let event = match u32::try_from(action) {
            Ok(bindings::netdev_cmd_NETDEV_UNREGISTER) => Event::Unregister,
            Ok(bindings::netdev_cmd_NETDEV_CHANGEADDR) => Event::ChangeAddr,
            _ => Event::Other,
        };
        // SAFETY: `dev` is alive for the duration of the notifier call (see above).
        T::event(event, unsafe { NetDev::from_raw(dev) });
        bindings::NOTIFY_OK as c_int
    }
}

#[pinned_drop]
impl<T: Notifier> PinnedDrop for NotifierRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered; after this returns the notifier
        // core no longer calls it.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}

/// A handler for address events: an IPv4 (`inetaddr`) or IPv6 (`inet6addr`) address was added
/// to or removed from a network device.
pub(crate) trait AddrNotifier: Send + Sync + 'static {
    /// An address of `dev` came or went. The IPv6 chain is atomic: this must not sleep.
    fn addr_changed(dev: &NetDev);
}

/// Registered IPv4 and IPv6 address notifiers calling `T`; unregistered on drop.
#[pin_data]
pub(crate) struct AddrNotifierRegistration<T: AddrNotifier> {
    #[pin]
    v4: AddrChain<T>,
    #[pin]
    v6: AddrChain<T>,
}

impl<T: AddrNotifier> AddrNotifierRegistration<T> {
    /// Registers `T` with both address chains (if the second fails, the first is
    /// unregistered as it is dropped).
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            v4 <- AddrChain::new(false),
            v6 <- AddrChain::new(true),
        })
    }
}

/// `T` registered with one address chain: IPv4 (`inetaddr`) or IPv6 (`inet6addr`).
///
/// # Invariants
///
/// `nb` is registered with the chain `v6` names for the whole life of the value.
#[pin_data(PinnedDrop)]
struct AddrChain<T: AddrNotifier> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    v6: bool,
    _handler: PhantomData<T>,
}

// SAFETY: The registration only holds the `notifier_block`, which the notifier core protects
// with its own locks; it can be dropped (unregistered) from any thread.
unsafe impl<T: AddrNotifier> Send for AddrChain<T> {}
// SAFETY: `&AddrChain` gives access to nothing.
unsafe impl<T: AddrNotifier> Sync for AddrChain<T> {}

/// The IPv6 address chain, where IPv6 is built in (`CONFIG_IPV6=y`).
#[cfg(CONFIG_IPV6)]
mod inet6 {
    use super::bindings;
    use kernel::{error::to_result, prelude::*};

    /// # Safety
    ///
    /// `nb` is a valid, pinned, unregistered notifier block.
    pub(super) unsafe fn register(nb: *mut bindings::notifier_block) -> Result {
        // SAFETY: By the caller's guarantee.
        to_result(unsafe { bindings::register_inet6addr_notifier(nb) })
    }

    /// # Safety
    ///
    /// `nb` was registered by [`register`].
    pub(super) unsafe fn unregister(nb: *mut bindings::notifier_block) {
        // SAFETY: By the caller's guarantee.
        unsafe { bindings::unregister_inet6addr_notifier(nb) };
    }
}

/// Without IPv6 built in there is no IPv6 chain: nothing to register with.
#[cfg(not(CONFIG_IPV6))]
mod inet6 {
    use super::bindings;
    use kernel::prelude::*;

    /// # Safety
    ///
    /// None: nothing is registered.
    pub(super) unsafe fn register(_nb: *mut bindings::notifier_block) -> Result {
        Ok(())
    }

    /// # Safety
    ///
    /// None: nothing was registered.
    pub(super) unsafe fn unregister(_nb: *mut bindings::notifier_block) {}
}

impl<T: AddrNotifier> AddrChain<T> {
    fn new(v6: bool) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            nb <- Opaque::try_ffi_init(move |slot: *mut bindings::notifier_block| {
                let mut nb: bindings::notifier_block = pin_init::zeroed();
                nb.notifier_call = Some(if v6 { Self::v6_call } else { Self::v4_call });
                // SAFETY: `slot` is valid for writes and pinned; we initialise it fully.
                unsafe { slot.write(nb) };
                // INVARIANT: Registered here, unregistered by `PinnedDrop`; on failure the
                // value is never created, so nothing is unregistered.
                // SAFETY: `slot` is initialised and pinned until `drop` unregisters it.
                unsafe {
                    if v6 {
                        inet6::register(slot)
                    } else {
                        to_result(bindings::register_inetaddr_notifier(slot))
                    }
                }
            }),
            v6,
            _handler: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the inetaddr chain with `ptr` a `struct in_ifaddr`.
    unsafe extern "C" fn v4_call(
        _nb: *mut bindings::notifier_block,
        _action: c_ulong,
        ptr: *mut c_void,
    ) -> c_int {
        // SAFETY: `ptr` is the `in_ifaddr` the chain reports on; its device is alive for the
        // call.
        let dev = unsafe { bindings::inetaddr_dev(ptr) };
        if !dev.is_null() {
            // SAFETY: Alive for the duration of the call (see above).
            T::addr_changed(unsafe { NetDev::from_raw(dev) });
        }
        bindings::NOTIFY_DONE as c_int
    }

    /// # Safety
    ///
    /// Called by the inet6addr chain with `ptr` a `struct inet6_ifaddr`.
    unsafe extern "C" fn v6_call(
        _nb: *mut bindings::notifier_block,
        _action: c_ulong,
        ptr: *mut c_void,
    ) -> c_int {
        // SAFETY: `ptr` is the `inet6_ifaddr` the chain reports on; its device is alive for
        // the call.
        let dev = unsafe { bindings::inet6addr_dev(ptr) };
        if !dev.is_null() {
            // SAFETY: Alive for the duration of the call (see above).
            T::addr_changed(unsafe { NetDev::from_raw(dev) });
        }
        bindings::NOTIFY_DONE as c_int
    }
}

#[pinned_drop]
impl<T: AddrNotifier> PinnedDrop for AddrChain<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered with this chain; once this returns
        // the chain no longer calls it.
        unsafe {
            if self.v6 {
                inet6::unregister(self.nb.get());
            } else {
                bindings::unregister_inetaddr_notifier(self.nb.get());
            }
        }
    }
}
