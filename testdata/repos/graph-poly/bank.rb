# Banking helpers.
module Bank
  # An account with a balance.
  class Account
    def initialize(balance)
      @balance = balance
    end

    def deposit(amount)
      validate(amount)
      @balance += amount
    end

    def validate(amount)
      raise ArgumentError if amount.negative?
    end
  end
end

RATE = 3
Bank::Account.new(1).deposit(2)
