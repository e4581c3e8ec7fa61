import LiveRoomProtocol
import Testing

@testable import LiveRoomCommerce

@Suite struct PKBattleTests {
    func score(_ room: String, units: Int, _ amounts: [String: Int64] = [:]) -> PKBattle.Score {
        PKBattle.Score(roomId: room, units: units, amounts: amounts)
    }

    @Test func theHighestAmountWinsInOneCurrency() {
        // More units is not more money: the amount decides.
        let scores = [score("a", units: 10, ["CNY": 10_000]), score("b", units: 2, ["CNY": 39_800]), score("c", units: 0)]
        #expect(PKBattle.winner(of: scores) == "b")
        // A room with no sales counts as 0 in the others' currency.
        #expect(PKBattle.winner(of: [score("a", units: 0), score("b", units: 1, ["USD": 1])]) == "b")
    }

    @Test func theMostUnitsWinWhenCurrenciesDiffer() {
        let scores = [score("a", units: 3, ["CNY": 1_000_000]), score("b", units: 5, ["USD": 500]), score("c", units: 0)]
        #expect(PKBattle.winner(of: scores) == "b")
        // One room selling in two currencies is enough to compare units.
        #expect(PKBattle.winner(of: [score("a", units: 4, ["CNY": 100, "USD": 100]), score("b", units: 3, ["CNY": 900])]) == "a")
    }

    @Test func aTieAtTheTopIsADraw() {
        #expect(PKBattle.winner(of: [score("a", units: 1, ["CNY": 500]), score("b", units: 5, ["CNY": 500]), score("c", units: 9, ["CNY": 100])]) == nil)
        #expect(PKBattle.winner(of: [score("a", units: 2, ["CNY": 1]), score("b", units: 2, ["USD": 1])]) == nil)
    }

    @Test func noSalesAtAllIsADraw() {
        #expect(PKBattle.winner(of: [score("a", units: 0), score("b", units: 0)]) == nil)
        #expect(PKBattle.winner(of: []) == nil)
    }

    @Test func jsonShowsAmountsAsDecimalsWithTheirCurrency() {
        let battle = PKBattle(
            battleId: "b1", rooms: [.init(roomId: "*7", userId: "x"), .init(roomId: "shop", userId: "y")], startedAt: 1_000, endsAt: 61_000,
            endedAt: 50_000, results: [score("*7", units: 2, ["CNY": 39_800, "JPY": 1200]), score("shop", units: 0)], winnerRoomId: "*7")
        guard case .object(let object) = battle.json else {
            Issue.record("not an object")
            return
        }
        #expect(object["winnerRoomId"] == .number(7))
        #expect(object["endTime"] == .number(50_000) && object["dueTime"] == .number(61_000))
        #expect(object["rooms"] == [["roomId": .number(7), "userId": "x"], ["roomId": "shop", "userId": "y"]])
        #expect(
            object["results"] == [
                ["roomId": .number(7), "units": .number(2), "amounts": [["amount": "398.00", "currency": "CNY"], ["amount": "1200", "currency": "JPY"]]],
                ["roomId": "shop", "units": .number(0), "amounts": []],
            ])

        let running = PKBattle(battleId: "b2", rooms: battle.rooms, startedAt: 1_000, endsAt: 61_000)
        guard case .object(let open) = running.json else { return }
        #expect(open["endTime"] == .null && open["results"] == .null && open["winnerRoomId"] == .null)
    }
}
