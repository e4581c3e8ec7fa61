import Testing

@testable import LiveRoomCommerce

@Suite struct MoneyTests {
    @Test(arguments: [
        ("199.00", "CNY", Int64(19_900)), ("199", "CNY", 19_900), ("0.5", "USD", 50), ("0", "EUR", 0), ("1200", "JPY", 1200),
        ("1.234", "KWD", 1234), ("10000000000.00", "CNY", 1_000_000_000_000),
    ])
    func decimalsBecomeExactMinorUnits(text: String, currency: String, minor: Int64) {
        #expect(Money(decimal: text, currency: currency) == Money(minorUnits: minor, currency: currency))
    }

    @Test(arguments: [
        ("-1.00", "CNY"), ("1.001", "CNY"), ("1.5", "JPY"), ("1e3", "CNY"), ("", "CNY"), (".5", "CNY"), ("5.", "CNY"), ("1,00", "CNY"),
        ("１００", "CNY"), ("10000000000.01", "CNY"), ("1.00", "cny"), ("1.00", "YUAN"), (" 1", "CNY"),
    ])
    func anythingElseIsRefused(text: String, currency: String) {
        #expect(Money(decimal: text, currency: currency) == nil, "\(text) \(currency)")
    }

    @Test func decimalStringsAndNumbersRoundTrip() {
        #expect(Money(minorUnits: 19_900, currency: "CNY").decimal == "199.00")
        #expect(Money(minorUnits: 5, currency: "USD").decimal == "0.05")
        #expect(Money(minorUnits: 1200, currency: "JPY").decimal == "1200")
        #expect(Money(minorUnits: 1234, currency: "KWD").decimal == "1.234")
        #expect(Money(minorUnits: 19_950, currency: "CNY").number == 199.5)
    }
}
