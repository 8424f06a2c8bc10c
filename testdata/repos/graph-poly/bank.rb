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
      audit
    end

    # audit calls entries with a receiver and no parentheses; the bare entries is its variable.
    def audit
      entries = 0
      entries
      self.entries
    end

    def entries
      @balance
    end

    def validate(amount)
      raise ArgumentError if amount.negative?
    end
  end
end

RATE = 3
Bank::Account.new(1).deposit(2)
