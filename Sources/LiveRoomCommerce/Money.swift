import LiveRoomProtocol

/// An exact amount of money: integer minor units of a currency (199.00 CNY is 19900 fen), never
/// a binary floating point number.
public struct Money: Sendable, Hashable {
    /// The amount in the currency's minor unit.
    public var minorUnits: Int64
    /// The ISO 4217 code: three capital letters.
    public var currency: String

    public init(minorUnits: Int64, currency: String) {
        self.minorUnits = minorUnits
        self.currency = currency
    }

    /// The largest amount a price may have, in minor units (10 billion in a currency of cents).
    public static let maxMinorUnits: Int64 = 1_000_000_000_000

    /// How many decimals the currency's minor unit has: 0 for yen and won, 3 for the dinars,
    /// 2 for the rest (yuan, dollars, euros…).
    public static func exponent(of currency: String) -> Int {
        switch currency {
        case "JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF", "PYG", "RWF": 0
        case "BHD", "KWD", "OMR", "JOD", "TND", "IQD", "LYD": 3
        default: 2
        }
    }

    /// Reads a decimal amount such as `"199.00"`, `"199"` or `"0.5"` in `currency`: no sign, no
    /// exponent, at most the currency's decimals. Nil for anything else.
    public init?(decimal text: String, currency: String) {
        guard Self.isCurrencyCode(currency) else { return nil }
        let exponent = Self.exponent(of: currency)
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 15, whole.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        var fraction = parts.count == 2 ? Substring(parts[1]) : ""
        guard parts.count == 1 || (!fraction.isEmpty && fraction.count <= exponent), fraction.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return nil
        }
        while fraction.count < exponent { fraction += "0" }
        guard let units = Int64(whole + fraction), units <= Self.maxMinorUnits else { return nil }
        self.init(minorUnits: units, currency: currency)
    }

    /// Whether `code` looks like an ISO 4217 code.
    public static func isCurrencyCode(_ code: String) -> Bool {
        code.count == 3 && code.allSatisfy { $0.isASCII && $0.isUppercase }
    }

    /// The amount as a decimal string with the currency's decimals: `"199.00"`.
    public var decimal: String {
        let exponent = Self.exponent(of: currency)
        guard exponent > 0 else { return String(minorUnits) }
        var divisor: Int64 = 1
        for _ in 0..<exponent { divisor *= 10 }
        let fraction = String(minorUnits % divisor)
        return "\(minorUnits / divisor)." + String(repeating: "0", count: exponent - fraction.count) + fraction
    }

    /// The amount as a JSON number, as TRTC's pop-up message writes `itemPrice` (199.0).
    public var number: Double { Double(decimal) ?? 0 }
}
