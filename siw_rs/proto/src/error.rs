// SPDX-License-Identifier: GPL-2.0

//! Terminate error codes.
//!
//! Every error the receiver or the placement checks can detect is a [`TermError`]: it
//! names the layer, error type and error code of the TERMINATE message to send (RFC
//! 5040 section 4.8 figure 9, RFC 5041 section 7.2, RFC 5044 section 8 and the codes
//! RFC 6581 adds for enhanced connection setup). [`TermError::header_copy`] says which
//! headers of the offending message the TERMINATE carries (RFC 5040 figure 10 and
//! section 7.1).

/// The layer that detected an error (Terminate Control field, RFC 5040 figure 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// RDMAP (0).
    Rdmap = 0,
    /// DDP (1).
    Ddp = 1,
    /// The lower layer protocol, here MPA (2).
    Llp = 2,
}

/// RDMAP error types (RFC 5040 figure 9).
pub mod rdmap_etype {
    /// Local Catastrophic Error.
    pub const CATASTROPHIC: u8 = 0x0;
    /// Remote Protection Error.
    pub const REMOTE_PROTECTION: u8 = 0x1;
    /// Remote Operation Error.
    pub const REMOTE_OPERATION: u8 = 0x2;
}

/// DDP error types (RFC 5041 section 7.2).
pub mod ddp_etype {
    /// Local Catastrophic.
    pub const CATASTROPHIC: u8 = 0x0;
    /// Tagged Buffer Error.
    pub const TAGGED: u8 = 0x1;
    /// Untagged Buffer Error.
    pub const UNTAGGED: u8 = 0x2;
}

/// The only LLP error type of MPA (C siw `LLP_ETYPE_MPA`).
pub const LLP_ETYPE_MPA: u8 = 0x0;

/// One TERMINATE reason: a (layer, error type, error code) triple that the RFCs define.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TermError {
    /// RDMAP, Local Catastrophic Error (0/0/any).
    RdmapCatastrophic,
    /// RDMAP, Remote Protection, Invalid STag (0/1/0x00).
    RdmapInvalidStag,
    /// RDMAP, Remote Protection, Base or bounds violation (0/1/0x01).
    RdmapBaseBounds,
    /// RDMAP, Remote Protection, Access rights violation (0/1/0x02).
    RdmapAccessRights,
    /// RDMAP, Remote Protection, STag not associated with RDMAP Stream (0/1/0x03).
    RdmapStagNotAssociated,
    /// RDMAP, Remote Protection, TO wrap (0/1/0x04).
    RdmapToWrap,
    /// RDMAP, Remote Protection, STag cannot be invalidated (0/1/0x09).
    RdmapProtCannotInvalidate,
    /// RDMAP, Remote Protection, Unspecified Error (0/1/0xff).
    RdmapProtUnspecified,
    /// RDMAP, Remote Operation, Invalid RDMAP version (0/2/0x05).
    RdmapVersion,
    /// RDMAP, Remote Operation, Unexpected OpCode (0/2/0x06).
    RdmapUnexpectedOpcode,
    /// RDMAP, Remote Operation, Catastrophic error localized to the RDMAP Stream (0/2/0x07).
    RdmapCatastrophicStream,
    /// RDMAP, Remote Operation, Catastrophic error, global (0/2/0x08).
    RdmapCatastrophicGlobal,
    /// RDMAP, Remote Operation, STag cannot be invalidated (0/2/0x09).
    RdmapOpCannotInvalidate,
    /// RDMAP, Remote Operation, Unspecified Error (0/2/0xff).
    RdmapOpUnspecified,
    /// DDP, Local Catastrophic (1/0/0x00).
    DdpCatastrophic,
    /// DDP, Tagged Buffer, Invalid STag (1/1/0x00).
    DdpTaggedInvalidStag,
    /// DDP, Tagged Buffer, Base or bounds violation (1/1/0x01).
    DdpTaggedBaseBounds,
    /// DDP, Tagged Buffer, STag not associated with DDP Stream (1/1/0x02).
    DdpTaggedStagNotAssociated,
    /// DDP, Tagged Buffer, TO wrap (1/1/0x03).
    DdpTaggedToWrap,
    /// DDP, Tagged Buffer, Invalid DDP version (1/1/0x04).
    DdpTaggedVersion,
    /// DDP, Untagged Buffer, Invalid QN (1/2/0x01).
    DdpUntaggedInvalidQn,
    /// DDP, Untagged Buffer, Invalid MSN, no buffer available (1/2/0x02).
    DdpUntaggedNoBuffer,
    /// DDP, Untagged Buffer, Invalid MSN, MSN range is not valid (1/2/0x03).
    DdpUntaggedMsnRange,
    /// DDP, Untagged Buffer, Invalid MO (1/2/0x04).
    DdpUntaggedInvalidMo,
    /// DDP, Untagged Buffer, DDP Message too long for available buffer (1/2/0x05).
    DdpUntaggedTooLong,
    /// DDP, Untagged Buffer, Invalid DDP version (1/2/0x06).
    DdpUntaggedVersion,
    /// LLP (MPA), TCP connection closed, terminated or lost (2/0/0x01).
    LlpConnectionLost,
    /// LLP (MPA), received MPA CRC does not match (2/0/0x02).
    LlpCrc,
    /// LLP (MPA), Marker and ULPDU Length disagree on the FPDU start (2/0/0x03).
    LlpFpduStart,
    /// LLP (MPA), invalid MPA Request or Reply frame (2/0/0x04).
    LlpInvalidReqResp,
    /// LLP (MPA), local catastrophic error (2/0/0x05, RFC 6581).
    LlpLocalCatastrophic,
    /// LLP (MPA), insufficient IRD resources (2/0/0x06, RFC 6581).
    LlpInsufficientIrd,
    /// LLP (MPA), no matching RTR option (2/0/0x07, RFC 6581).
    LlpNoMatchingRtr,
}

/// Which headers of the offending message a TERMINATE carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeaderCopy {
    /// Neither the DDP nor the RDMAP header (Terminate bits M = D = R = 0).
    None,
    /// The DDP segment length and the DDP header (M = D = 1, R = 0).
    Ddp,
    /// The DDP segment length, the DDP header and the RDMA Read Request header
    /// (M = D = R = 1).
    DdpRdmap,
}

impl TermError {
    /// All defined reasons, in declaration order.
    pub const ALL: [TermError; 33] = [
        Self::RdmapCatastrophic,
        Self::RdmapInvalidStag,
        Self::RdmapBaseBounds,
        Self::RdmapAccessRights,
        Self::RdmapStagNotAssociated,
        Self::RdmapToWrap,
        Self::RdmapProtCannotInvalidate,
        Self::RdmapProtUnspecified,
        Self::RdmapVersion,
        Self::RdmapUnexpectedOpcode,
        Self::RdmapCatastrophicStream,
        Self::RdmapCatastrophicGlobal,
        Self::RdmapOpCannotInvalidate,
        Self::RdmapOpUnspecified,
        Self::DdpCatastrophic,
        Self::DdpTaggedInvalidStag,
        Self::DdpTaggedBaseBounds,
        Self::DdpTaggedStagNotAssociated,
        Self::DdpTaggedToWrap,
        Self::DdpTaggedVersion,
        Self::DdpUntaggedInvalidQn,
        Self::DdpUntaggedNoBuffer,
        Self::DdpUntaggedMsnRange,
        Self::DdpUntaggedInvalidMo,
        Self::DdpUntaggedTooLong,
        Self::DdpUntaggedVersion,
        Self::LlpConnectionLost,
        Self::LlpCrc,
        Self::LlpFpduStart,
        Self::LlpInvalidReqResp,
        Self::LlpLocalCatastrophic,
        Self::LlpInsufficientIrd,
        Self::LlpNoMatchingRtr,
    ];

    /// The layer field of the Terminate Control word.
    pub const fn layer(self) -> Layer {
        match self.triple().0 {
            0 => Layer::Rdmap,
            1 => Layer::Ddp,
            _ => Layer::Llp,
        }
    }

    /// The error type field (4 bits).
    pub const fn etype(self) -> u8 {
        self.triple().1
    }

    /// The error code field (8 bits).
    pub const fn ecode(self) -> u8 {
        self.triple().2
    }

    /// (layer, error type, error code) as sent on the wire.
    pub const fn triple(self) -> (u8, u8, u8) {
        use ddp_etype as d;
        use rdmap_etype as r;
        match self {
            Self::RdmapCatastrophic => (0, r::CATASTROPHIC, 0x00),
            Self::RdmapInvalidStag => (0, r::REMOTE_PROTECTION, 0x00),
            Self::RdmapBaseBounds => (0, r::REMOTE_PROTECTION, 0x01),
            Self::RdmapAccessRights => (0, r::REMOTE_PROTECTION, 0x02),
            Self::RdmapStagNotAssociated => (0, r::REMOTE_PROTECTION, 0x03),
            Self::RdmapToWrap => (0, r::REMOTE_PROTECTION, 0x04),
            Self::RdmapProtCannotInvalidate => (0, r::REMOTE_PROTECTION, 0x09),
            Self::RdmapProtUnspecified => (0, r::REMOTE_PROTECTION, 0xff),
            Self::RdmapVersion => (0, r::REMOTE_OPERATION, 0x05),
            Self::RdmapUnexpectedOpcode => (0, r::REMOTE_OPERATION, 0x06),
            Self::RdmapCatastrophicStream => (0, r::REMOTE_OPERATION, 0x07),
            Self::RdmapCatastrophicGlobal => (0, r::REMOTE_OPERATION, 0x08),
            Self::RdmapOpCannotInvalidate => (0, r::REMOTE_OPERATION, 0x09),
            Self::RdmapOpUnspecified => (0, r::REMOTE_OPERATION, 0xff),
            Self::DdpCatastrophic => (1, d::CATASTROPHIC, 0x00),
            Self::DdpTaggedInvalidStag => (1, d::TAGGED, 0x00),
            Self::DdpTaggedBaseBounds => (1, d::TAGGED, 0x01),
            Self::DdpTaggedStagNotAssociated => (1, d::TAGGED, 0x02),
            Self::DdpTaggedToWrap => (1, d::TAGGED, 0x03),
            Self::DdpTaggedVersion => (1, d::TAGGED, 0x04),
            Self::DdpUntaggedInvalidQn => (1, d::UNTAGGED, 0x01),
            Self::DdpUntaggedNoBuffer => (1, d::UNTAGGED, 0x02),
            Self::DdpUntaggedMsnRange => (1, d::UNTAGGED, 0x03),
            Self::DdpUntaggedInvalidMo => (1, d::UNTAGGED, 0x04),
            Self::DdpUntaggedTooLong => (1, d::UNTAGGED, 0x05),
            Self::DdpUntaggedVersion => (1, d::UNTAGGED, 0x06),
            Self::LlpConnectionLost => (2, LLP_ETYPE_MPA, 0x01),
            Self::LlpCrc => (2, LLP_ETYPE_MPA, 0x02),
            Self::LlpFpduStart => (2, LLP_ETYPE_MPA, 0x03),
            Self::LlpInvalidReqResp => (2, LLP_ETYPE_MPA, 0x04),
            Self::LlpLocalCatastrophic => (2, LLP_ETYPE_MPA, 0x05),
            Self::LlpInsufficientIrd => (2, LLP_ETYPE_MPA, 0x06),
            Self::LlpNoMatchingRtr => (2, LLP_ETYPE_MPA, 0x07),
        }
    }

    /// Maps a received (layer, error type, error code) back to a reason.
    ///
    /// A Local Catastrophic RDMAP error matches any error code ("Any value in this
    /// field is acceptable", RFC 5040 figure 9). Unknown triples give `None`.
    pub fn from_wire(layer: u8, etype: u8, ecode: u8) -> Option<Self> {
        if layer == 0 && etype == rdmap_etype::CATASTROPHIC {
            return Some(Self::RdmapCatastrophic);
        }
        Self::ALL
            .iter()
            .copied()
            .find(|e| e.triple() == (layer, etype, ecode))
    }

    /// Which headers the TERMINATE for this error carries, given the opcode of the
    /// offending message (if one was received).
    ///
    /// RFC 5040 figure 10: LLP errors and Local Catastrophic errors carry no header;
    /// DDP errors carry the DDP segment length and DDP header; RDMAP Remote Protection
    /// and Remote Operation errors carry the DDP header "if possible". RFC 5040 section
    /// 7.1 rule 3: for errors on an incoming RDMA Read Request, the Terminated RDMA
    /// Header is included too.
    pub fn header_copy(self, offending: Option<super::rdmap::Opcode>) -> HeaderCopy {
        let Some(op) = offending else {
            return HeaderCopy::None;
        };
        match self.layer() {
            Layer::Llp => HeaderCopy::None,
            Layer::Ddp => HeaderCopy::Ddp,
            Layer::Rdmap => {
                if self.etype() == rdmap_etype::CATASTROPHIC {
                    HeaderCopy::None
                } else if op == super::rdmap::Opcode::ReadRequest {
                    HeaderCopy::DdpRdmap
                } else {
                    HeaderCopy::Ddp
                }
            }
        }
    }
}

/// The error of `encode` functions: the output buffer is too small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferTooSmall;

/// The error of header `parse` functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// More bytes are needed: the header is at least `needed` bytes long.
    Truncated {
        /// The number of bytes needed to make progress.
        needed: usize,
    },
    /// The bytes violate the protocol; the reason is the TERMINATE to send.
    Invalid(TermError),
}

impl From<TermError> for ParseError {
    fn from(e: TermError) -> Self {
        Self::Invalid(e)
    }
}

#[cfg(test)]
mod tests {
    use super::super::rdmap::Opcode;
    use super::*;

    #[test]
    fn codes_match_c_siw_iwarp_h() {
        // iwarp.h: TERM_ERROR_LAYER_*, *_ETYPE_*, *_ECODE_*.
        assert_eq!(TermError::LlpCrc.triple(), (2, 0, 2));
        assert_eq!(TermError::LlpFpduStart.triple(), (2, 0, 3));
        assert_eq!(TermError::LlpInsufficientIrd.triple(), (2, 0, 6));
        assert_eq!(TermError::LlpNoMatchingRtr.triple(), (2, 0, 7));
        assert_eq!(TermError::DdpUntaggedNoBuffer.triple(), (1, 2, 2));
        assert_eq!(TermError::DdpUntaggedMsnRange.triple(), (1, 2, 3));
        assert_eq!(TermError::DdpTaggedVersion.triple(), (1, 1, 4));
        assert_eq!(TermError::DdpUntaggedVersion.triple(), (1, 2, 6));
        assert_eq!(TermError::RdmapUnexpectedOpcode.triple(), (0, 2, 6));
        assert_eq!(TermError::RdmapVersion.triple(), (0, 2, 5));
        assert_eq!(TermError::RdmapCatastrophicStream.triple(), (0, 2, 7));
        assert_eq!(TermError::RdmapAccessRights.triple(), (0, 1, 2));
        assert_eq!(TermError::LlpCrc.layer(), Layer::Llp);
    }

    #[test]
    fn wire_round_trip_is_identity_for_every_code() {
        for e in TermError::ALL {
            let (l, t, c) = e.triple();
            assert_eq!(TermError::from_wire(l, t, c), Some(e));
        }
        assert_eq!(
            TermError::from_wire(0, 0, 0x5a),
            Some(TermError::RdmapCatastrophic)
        );
        assert_eq!(TermError::from_wire(3, 0, 0), None);
        assert_eq!(TermError::from_wire(1, 2, 0x07), None);
    }

    #[test]
    fn header_copy_follows_rfc5040_figure_10() {
        assert_eq!(
            TermError::LlpCrc.header_copy(Some(Opcode::Send)),
            HeaderCopy::None
        );
        assert_eq!(
            TermError::DdpUntaggedInvalidQn.header_copy(Some(Opcode::ReadRequest)),
            HeaderCopy::Ddp
        );
        assert_eq!(
            TermError::RdmapAccessRights.header_copy(Some(Opcode::ReadRequest)),
            HeaderCopy::DdpRdmap
        );
        assert_eq!(
            TermError::RdmapUnexpectedOpcode.header_copy(Some(Opcode::Send)),
            HeaderCopy::Ddp
        );
        assert_eq!(
            TermError::RdmapCatastrophic.header_copy(Some(Opcode::Send)),
            HeaderCopy::None
        );
        assert_eq!(
            TermError::DdpTaggedBaseBounds.header_copy(None),
            HeaderCopy::None
        );
    }
}
